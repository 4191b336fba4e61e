"""The site's scale benchmark: build from thousands of synthetic runs, cold and warm, and weigh a leaderboard page.

    python -m tests.scale_check [--runs 5000] [--steps 1000] [--dir build/scale]

The default is the bar's size: 5,000 runs of 2 rows a step (step time and loss) × 1,000 steps ≈ 10 million
measurement rows. A real 2,000-step run has about 4,000 rows, so `--steps 2000` (20 million) is the heavier case.

Synthetic result files (random values, see tests/synthetic.py; never committed) are written once under DIR/data,
then the site is built twice into DIR: cold (no build cache) and warm (the cache of the first build, the usual
case when a few runs are added). A leaderboard page's weight counts the page and every script and stylesheet it
loads from the site, raw and gzip-compressed (what a server that compresses sends). Prints a table; nothing here
is a result of any engine.
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests import synthetic


def page_weight(site: Path, page: Path) -> tuple[int, int]:
    """(raw bytes, gzip bytes) of a page plus the scripts and stylesheets it references inside the site."""
    html = page.read_text()
    refs = set(re.findall(r'<script[^>]+src="([^"]+)"', html)) | set(re.findall(r'<link[^>]+href="([^"]+)"', html))
    files = [page]
    for ref in sorted(refs):
        target = (page.parent / ref.split("?")[0]).resolve()
        if target.is_file() and target.is_relative_to(site.resolve()) and target.suffix in (".js", ".css"):
            files.append(target)
    raw = sum(f.stat().st_size for f in files)
    return raw, sum(len(gzip.compress(f.read_bytes(), 6)) for f in files)


def build(data: Path, out: Path, work: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "generator.build", "--data", str(data), "--out", str(out), "--work", str(work)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    took = time.perf_counter() - t0
    rejected = [line for line in done.stderr.splitlines() if line.startswith("rejected ")]
    if rejected:  # a timing of a build that threw files out says nothing
        raise SystemExit(f"{len(rejected)} synthetic file(s) rejected, e.g. {rejected[0]}")
    return took


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.scale_check", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5000)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--dir", type=Path, default=Path("build/scale"))
    args = p.parse_args(argv)
    data = args.dir / f"data-{args.runs}x{args.steps}-v{synthetic.VERSION}"
    if not data.exists():
        print(f"writing {args.runs} synthetic runs × {args.steps} steps to {data} ...", flush=True)
        tmp = data.with_name(data.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-m", "tests.synthetic", str(tmp), "--runs", str(args.runs), "--steps", str(args.steps)],
            check=True,
        )
        tmp.rename(data)
    out, work = args.dir / "site", args.dir / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    print("cold build (no cache, no earlier site) ...", flush=True)
    cold = build(data, out, work)
    print("warm build (cache of the cold one) ...", flush=True)
    warm = build(data, out, work)
    boards = sorted((out / "leaderboards").glob("*.html"), key=lambda f: f.stat().st_size)
    raw, packed = page_weight(out, boards[-1])
    site_bytes = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"\nscale check: {args.runs} runs × {args.steps} steps ({args.runs * (2 * args.steps + 2):,} rows)")
    print(f"  cold build            {cold:7.1f} s")
    print(f"  warm build            {warm:7.1f} s")
    print(f"  heaviest leaderboard  {raw / 1e6:7.2f} MB raw, {packed / 1e6:.2f} MB gzip ({boards[-1].name})")
    print(f"  whole site            {site_bytes / 1e9:7.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
