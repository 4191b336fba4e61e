"""Fair Fight site generator: load + validate data/, derive, chart, render pages, build with MkDocs Material.

It may import `runners.schema` and `runners.metrics`, never an engine.
"""
