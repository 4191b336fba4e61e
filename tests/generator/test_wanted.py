"""Wanted runs (generator/derive/wanted.py, `fairfight wanted`) on the committed data: the runs that would settle the
verdict's undecided answers are its own "further runs" advice, with full-length `fairfight bench` commands, and the
boards' unreplicated rows each want one more run; by default only what this host's hardware can run is listed.
Nothing is mocked: the host is this one, or a `Host` written out for the hardware a test asks about."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

from generator import derive
from generator.commands import wanted
from generator.derive import configurations
from generator.derive import wanted as derive_wanted
from runners import engines
from runners.wanted_runs import Host

ROOT = Path(__file__).resolve().parents[2]
DDP_WORDS = "whether tuned DDP closes the gap to 1.1×"
"""How the home page states tuned DDP's answer when undecided (site_src/templates/index.md.j2)."""


def test_the_json_lists_the_deciding_runs_of_tuned_ddp(committed_results: derive.Results) -> None:
    """`fairfight wanted --format json`, as a contributor types it: tuned DDP's undecided answer wants the
    verdict's further runs at each of its deciding points, each a full-length `fairfight bench` command. A host with
    two H200s is listed them; one that fits none of the wanted runs (this CPU host) is listed every one, as `--all`
    lists them anywhere."""
    here = wanted.this_host()
    fits_some = any(wanted.fits_host(here, e) for e in committed_results.wanted)
    every = ["--all"] if fits_some and here.gpus.count("NVIDIA H200") < 2 else []  # a host with other GPUs
    done = subprocess.run([sys.executable, "-m", "fairfight", "wanted", "--format", "json", *every], cwd=ROOT,
                          capture_output=True, text=True, check=True)  # fmt: skip
    listed = json.loads(done.stdout)
    ddp = committed_results.verdict.said.ddp if committed_results.verdict else None
    assert ddp is not None and ddp.decision == "undecided" and ddp.further_runs  # today's answer, as the page says
    steady = [e for e in listed if e["settles"].startswith(DDP_WORDS) and "steady state" in e["settles"]]
    assert sorted((e["label"], e["micro_batch"]) for e in steady) == sorted(
        (d.label, d.micro_batch) for d in ddp.deciding
    )
    points = {
        (r["curve_hash"], r["micro_batch"]): r["variant"]
        for r in committed_results.verdict.points.iter_rows(named=True)
    }
    for entry in steady:
        assert entry["runs"] == ddp.further_runs and entry["probability"] == ddp.settle_probability
        assert entry["if_figures_hold"] == ddp.settles_to and entry["hardware"] == "2 × NVIDIA H200"
        variant = points[(entry["settings_hash"], entry["micro_batch"])]
        assert entry["command"] == (
            f"fairfight bench --suite h100 --workload train-gpt-1.27b-mb4 --variant {variant} "
            f"--micro-batch {entry['micro_batch']}"
        )  # the deciding points ran 300 steps: the runs wanted are full length, so no --steps
        assert (
            f"{ddp.further_runs} more full-length runs at each of its {len(ddp.deciding)} deciding points"
            in (entry["becomes"])
        )
        assert set(entry) >= {"kind", "href", "accelerator", "accelerator_count", "runs_now", "fits_host"}


def test_every_unreplicated_row_wants_one_more_run(committed_results: derive.Results) -> None:
    rows = [
        (suite, workload, variant)
        for (suite, workload), board in committed_results.boards.items()
        if "interval_basis" in board.ranked.columns
        for variant in board.ranked.filter(pl.col("interval_basis").str.starts_with(configurations.UNREPLICATED))[
            "variant"
        ]
    ]
    wanted_rows = [e for e in committed_results.wanted if e.kind == derive_wanted.UNREPLICATED]
    assert rows and sorted(rows) == sorted((e.suite, e.workload, e.variant) for e in wanted_rows)
    for entry in wanted_rows:
        assert entry.runs == 1 and entry.command is not None
        assert entry.command.startswith(f"fairfight bench --suite {entry.suite} --workload {entry.workload} ")
        assert entry.href == f"leaderboards/{entry.suite}-{entry.workload}.md"


def test_every_configuration_kept_from_a_rank_only_by_its_tool_wants_one_more_run_beside_it(
    committed_results: derive.Results,
) -> None:
    """A finished configuration whose newest run does not rank because its engine's own tool did not run, failed or
    disagreed (the committed vLLM served points and MLX tests), and that has no ranked row, wants one run of the same
    settings (the bench runs the tool beside it); one with a ranked row, or held back for another reason, wants none."""
    expected = set()
    cannot = tuple(f" ({why})" for why in engines.tools_without_depth().values())
    for (suite, workload), board in committed_results.boards.items():
        unranked = board.unranked
        if not unranked.height or "unranked" not in unranked.columns:
            continue
        ranked = {(r["variant"], r["settings_hash"], r["accelerator"], r["accelerator_count"])
                  for r in board.ranked.iter_rows(named=True)} if board.ranked.height else set()  # fmt: skip
        newest: dict[tuple, dict] = {}  # each configuration's newest finished run, by its start
        for run in unranked.filter(pl.col("status") == "ok").sort("started_at").iter_rows(named=True):
            tool_only = any(w in run["unranked"] for w in derive_wanted.NOT_CROSS_CHECKED)
            if tool_only and not run["unranked"].endswith(cannot):
                key = (run["variant"], run["settings_hash"], run["accelerator"], run["accelerator_count"])
                newest[key] = run
        expected |= {(suite, workload, *key) for key in newest if key not in ranked}
    unverified = [e for e in committed_results.wanted if e.kind == derive_wanted.UNVERIFIED]
    got = [(e.suite, e.workload, e.variant, e.settings_hash, e.accelerator, e.accelerator_count) for e in unverified]
    assert unverified and sorted(got) == sorted(expected)  # one entry per configuration, every one
    for entry in unverified:
        assert entry.runs == 1 and entry.command is not None and entry.if_figures_hold == "cross-checked"
        assert any(w in entry.settles for w in derive_wanted.NOT_CROSS_CHECKED)
        assert entry.command.startswith(f"fairfight bench --suite {entry.suite} --workload {entry.workload} ")
    served = [e for e in unverified if "-serve-" in e.workload]
    assert served and all("vllm bench" in e.settles for e in served)  # today's: TTFT against vllm bench serve


def test_by_default_only_what_this_host_can_run_or_every_one_where_it_can_run_none(
    committed_results: derive.Results,
) -> None:
    entries = committed_results.wanted
    here = wanted.this_host()
    shown = wanted.listed(entries, here, every=False)
    if any(fits for _, fits in shown):
        assert all(fits for _, fits in shown)
    else:  # a host that fits none of them (this CPU host: every run is on H100s or H200s) is shown them all, marked
        assert [e for e, _ in shown] == list(entries)
        text = wanted.text(entries, shown, here, every=False)
        assert text.startswith(f"{len(entries)} wanted runs, 0 fit this host ({here}); every one is listed")
        assert text.count("(not this host)") == len(entries)
    cpu = Host("some CPU", ())
    assert [e for e, _ in wanted.listed(entries, cpu, every=False)] == list(entries)
    two = Host("some CPU", ("NVIDIA H200", "NVIDIA H200"))
    one = Host("some CPU", ("NVIDIA H200",))
    ddp = [e for e in entries if e.settles.startswith(DDP_WORDS)]
    assert ddp and all(
        wanted.fits_host(two, e) and not wanted.fits_host(one, e) for e in ddp
    )  # the fight runs on 2 GPUs
    assert all(not wanted.fits_host(Host("some CPU", ("NVIDIA H100 80GB HBM3",) * 8), e) for e in ddp)
    assert {e.accelerator_count for e, _ in wanted.listed(entries, one, every=False)} <= {1}


def test_a_missing_data_folder_is_one_sentence(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "fairfight", "wanted", "--data-dir", str(tmp_path / "none")],
                          cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip() == f"wanted: --data-dir {tmp_path / 'none'}: no such folder (run from the repository "
        "root, or pass it)"
    )


def test_the_page_groups_them_by_hardware_with_the_json_beside(
    committed_results: derive.Results, tmp_path: Path
) -> None:
    """wanted.md: a section per hardware, each answer or row in the words `fairfight wanted` prints, each run's
    command; downloads/wanted.json holds every entry, as the command's JSON does less whether a host fits."""
    from generator.render import pages, wanted_page

    wanted_page.write(pages.environment(), tmp_path, committed_results.wanted)
    page = (tmp_path / "wanted.md").read_text()
    hardware = list(dict.fromkeys(e.hardware for e in committed_results.wanted))
    headings = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    # each heading's anchor is its place, never its text: a hardware name is the record's, hostile until checked
    assert headings == [f"{h} {{#hardware-{i}}}" for i, h in enumerate(hardware, 1)]
    ddp = [e for e in committed_results.wanted if e.settles.startswith(DDP_WORDS)]
    assert ddp and f"**{pages.md_text(ddp[0].settles)}** ([the verdict](index.md#the-verdict)): " in page
    for entry in committed_results.wanted:
        assert f"<code>{pages.md_text(entry.command)}</code>" in page
    assert f"[JSON]({wanted_page.DOWNLOAD})" in page
    listed = json.loads((tmp_path / wanted_page.DOWNLOAD).read_text())
    assert listed == [json.loads(json.dumps(e.to_json())) for e in committed_results.wanted]
