"""Fair Fight runners: suite specs, one module per engine, the result schema and the append-only store.

Nothing here imports `generator/`, and no engine is imported at module level.
"""
