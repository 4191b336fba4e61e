"""The site's many-run benchmark: every command a user with tens of thousands of runs waits on, timed and weighed.

    python -m tests.bench_site [--runs 5000 20000 50000] [--dir build/bench-site] [--skip validate-dir release]

For each size, a dataset of copies of the committed records (tests/replicate.py; cached under DIR, never committed)
is checked and built as a user would: `validate` of the whole folder, a cold `site` (no cache), one new run added
and then `validate` of that one file and a warm `site`, `compare` of two runs, and `release`. Each command runs in
its own process; its wall time and peak resident memory (the process and everything it waited for, from wait4) are
printed as a table, with the built site's size. Issue 37's bars at 50,000 runs on 2 cores and 24 GiB: cold build
≤ 5 min and ≤ 4 GB, warm build after one new run ≤ 20 s, validate of one new file ≤ 5 s, compare of two runs ≤ 5 s,
site ≤ 1 GB. `--skip` leaves out the two commands no bar names (`validate` of the whole folder, `release`), which
take most of a large size's time; their cells then read "skipped". Nothing here is a result of any engine, and
nothing asserts: the table is the benchmark.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from tests import replicate

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Timed:
    wall_s: float
    peak_rss_bytes: int
    status: int
    cpu_s: float
    """User plus system time of the command and its reaped children, beside the wall time: on a 2-core host the wall
    time also moves with whatever else runs there (one warm build of 50,206 runs took 14.7 s in the bench and 15-28 s
    when timed again on 2026-12-06, while other work shared the cores at times); the CPU time says how much work the
    command itself did."""

    def cell(self) -> str:
        text = f"{self.wall_s:,.1f} s ({self.cpu_s:,.0f} CPU-s), {self.peak_rss_bytes / 1e9:.2f} GB"
        return text if self.status == 0 else f"{text} (exit {self.status}{', killed' if self.status < 0 else ''})"


# The command is started by a small launcher, not by this process: Linux carries a process's peak RSS across fork
# and exec (the child's peak starts at its parent's), so a command forked from a parent that has read thousands of
# files would report the parent's memory as its own. The launcher prints the command's exit status, its peak and its
# CPU time.
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime)
"""


def timed(argv: Sequence[str], cache: Path | None = None) -> Timed:
    """Run `argv` to its end: wall time, exit status, and the peak RSS of it and its reaped children (wait4).
    `cache`: the cache folder it may use (FAIRFIGHT_SITE_CACHE: the site build's, as a user's commands share
    build/cache)."""
    env = {**os.environ, "FAIRFIGHT_PROGRESS": "0"} | ({"FAIRFIGHT_SITE_CACHE": str(cache)} if cache else {})
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], cwd=ROOT, capture_output=True, text=True, check=True,
                          env=env)  # fmt: skip
    took = time.perf_counter() - t0
    status, peak, cpu = done.stdout.split()
    return Timed(took, int(peak), int(status), float(cpu))


def fairfight(*args: str) -> list[str]:
    return [sys.executable, "-m", "fairfight", *args]


def folder_size(path: Path) -> tuple[int, int]:
    """(bytes, files) under `path`."""
    sizes = [p.stat().st_size for p in path.rglob("*") if p.is_file()]
    return sum(sizes), len(sizes)


def dataset(root: Path, runs: int) -> Path:
    """The cached copy dataset of at least `runs` files, committed in a git repository of its own (an edition freezes
    committed files only); made once, and a half-made one is remade."""
    repo = root / f"repo-{runs}"
    data = repo / "data"
    if (repo / ".complete").exists():
        return data
    shutil.rmtree(repo, ignore_errors=True)
    print(f"  writing {runs:,} runs (copies of data/) to {data} ...", flush=True)
    replicate.replicate(ROOT / "data", data, runs)
    git = ["git", "-C", str(repo), "-c", "user.name=bench-site", "-c", "user.email=bench-site@localhost"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "data"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "copies of the committed records"], check=True)
    (repo / ".git" / "info" / "exclude").open("a").write(".complete\n")
    (repo / ".complete").write_text("")
    return data


def two_runs(data: Path) -> tuple[str, str]:
    """Two finished training runs of one workload and variant, for `compare RUN RUN`."""
    seen: dict[str, str] = {}
    for f in replicate.sources(ROOT / "data"):
        m = replicate.TAIL.match(f.stem)
        if m and "-train-" in f.stem:
            key = m["head"].split("-", 1)[1]
            if key in seen:
                return seen[key], f.stem
            seen[key] = f.stem
    raise SystemExit("no two training runs of one configuration in data/ to compare")


SKIPPABLE = ("validate-dir", "release")
"""Commands `--skip` may leave out: those no bar of issue 37 names."""


def bench(root: Path, runs: int, skip: Sequence[str] = ()) -> dict[str, str]:
    data = dataset(root, runs)
    found = len(replicate.sources(data))
    out, work = root / f"site-{runs}", root / f"work-{runs}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    # the command a user runs (`nox -s site` runs it too): its worker processes start from the CLI's small main
    # module, where `python -m generator.build` had each of them import the whole generator again first
    build = fairfight("site", "--data", str(data), "--out", str(out), "--work", str(work))
    row: dict[str, str] = {"runs": f"{found:,}"}
    if "validate-dir" in skip:
        row["validate DIR"] = "skipped"
    else:
        print(f"  [{runs:,}] validate ...", flush=True)
        row["validate DIR"] = timed(fairfight("validate", str(data))).cell()
    print(f"  [{runs:,}] site, cold ...", flush=True)
    row["site, cold"] = timed(build).cell()
    editions = data / "editions"
    if "release" in skip:
        row["release NAME"] = "skipped"
    else:
        print(f"  [{runs:,}] release ...", flush=True)
        try:
            row["release NAME"] = timed(fairfight("release", "bench-site", "--data-dir", str(data))).cell()
        finally:
            (editions / "bench-site.json").unlink(missing_ok=True)  # the cached dataset stays as committed
    source = next(f for f in replicate.sources(ROOT / "data") if replicate.TAIL.match(f.stem))
    new = data / source.parent.name / f"{replicate.copy_id(source.stem, 10**9)}.parquet"
    try:
        pq.write_table(replicate.copy_table(pq.read_table(source), 10**9), new, compression="zstd")
        print(f"  [{runs:,}] one new run: validate it, site warm ...", flush=True)
        row["validate one new file"] = timed(fairfight("validate", str(new)), work / "cache").cell()
        row["site, warm, one new run"] = timed(build).cell()
        size, files = folder_size(out)
        run_pages, _ = folder_size(out / "runs") if (out / "runs").exists() else (0, 0)
        downloads, _ = folder_size(out / "downloads") if (out / "downloads").exists() else (0, 0)
        row["site output"] = (f"{size / 1e9:.2f} GB, {files:,} files (runs/ {run_pages / 1e9:.2f} GB, downloads/ "
                              f"{downloads / 1e6:.0f} MB)")  # fmt: skip
        a, b = two_runs(data)
        print(f"  [{runs:,}] compare ...", flush=True)
        row["compare RUN RUN"] = timed(fairfight("compare", a, b, "--data-dir", str(data)), work / "cache").cell()
    finally:
        new.unlink(missing_ok=True)  # the cached dataset stays the copies alone
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench_site", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--runs", type=int, nargs="+", default=[5_000, 20_000, 50_000])
    p.add_argument("--dir", type=Path, default=ROOT / "build" / "bench-site")
    p.add_argument("--skip", nargs="+", choices=SKIPPABLE, default=[], help="commands no bar names, left out")
    args = p.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.runs:
        rows.append(bench(args.dir, n, args.skip))
        print_table(rows)
    return 0


def print_table(rows: list[dict[str, str]]) -> None:
    """Markdown: one row per command, one column per size (wall time, peak RSS)."""
    keys = [k for k in rows[0] if k != "runs"]
    print("\n| command | " + " | ".join(f"{r['runs']} runs" for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k in keys:
        print(f"| `{k}` | " + " | ".join(r.get(k, "–") for r in rows) + " |")
    print(flush=True)


if __name__ == "__main__":
    sys.exit(main())
