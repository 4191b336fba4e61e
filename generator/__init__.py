"""Fair Fight site generator: load + validate data/, derive, chart, render pages, build with MkDocs Material.

It may import `runners.schema` and `runners.metrics`, never an engine.
"""

from pathlib import Path

_HERE = Path(__file__).resolve().parent
# The pages people write, templates and assets: at the top of a checkout (site_src/); an installed package carries
# them inside the generator (pyproject.toml, [tool.hatch.build.targets.wheel.force-include]).
SITE_SRC = _HERE / "site_src" if (_HERE / "site_src").is_dir() else _HERE.parent / "site_src"
