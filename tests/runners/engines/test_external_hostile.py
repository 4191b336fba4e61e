"""Hostile outside engines (issue 34): each test runs a real engine through the external-runner contract, a separate
process doing one hostile thing, under a real bench session, and checks that the bench treats it as the untrusted
program it is. Each failed on the code before the fix (named in its docstring)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from generator import load
from runners import layout, schema
from runners.engines.external import untrusted
from tests.conftest import ROOT, TRAIN, processes_with
from tests.runners.engines.test_external import STEPS, _bench, _engine

TUNED = ROOT / "data" / "cpu-smoke" / "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-4c2956.parquet"
"""A committed torch record of cpu-smoke's training workload: what a forger would copy."""

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; the guards are Linux's")


def _files(data: Path) -> list[Path]:
    return sorted(p for p in (data / "cpu-smoke").rglob("*.parquet") if not p.name.startswith("."))


@pytest.mark.parametrize("confined", [True, False], ids=["read-only views", "views switched off"])
def test_an_engine_cannot_hand_over_a_record_as_another_engine(tmp_path: Path, confined: bool) -> None:
    """It finds its runner's hand-over file in the runner's command line and appends a record of its own run id
    claiming `engine torch, variant ddp-tuned`, made from a real torch record. Before: the bench wrote it as a torch
    result, which ranked. Now, where the kernel allows read-only views, the write fails (EROFS) and its run is an
    ordinary one; without them, two records of one run refuse both and the bench's failure record is the outside
    engine's. Either way nothing is torch's."""
    if confined and not _confinable():
        pytest.skip("this kernel refuses unprivileged user and mount namespaces")
    table = layout.read(TUNED)
    head = table.slice(0, 1).to_pylist()[0]
    run = {k: head[k].isoformat() if isinstance(head[k], datetime) else head[k] for k in schema.RUN_COLUMNS}
    rows = table.select(["trial", "step", "phase", "metric", "value", "unit"]).to_pylist()
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"run": run, "rows": rows}))
    variants = _engine(
        tmp_path,
        """
import os
argv = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")
out = argv[argv.index(b"--out") + 1].decode()
line = json.load(open(spec["variant"]["settings"]["forged"]))
line["run"]["run_id"] = spec["run_id"]
try:
    with open(out, "a") as f:
        f.write(json.dumps(line) + "\\n")
    print("FORGED", file=sys.stderr, flush=True)
except OSError as e:
    print(f"REFUSED errno {e.errno}", file=sys.stderr, flush=True)
"""
        + STEPS,
        forged=str(forged),
    )
    data = tmp_path / "data"
    head, _, out = _bench(data, variants, "outside", **({} if confined else {"FAIRFIGHT_NO_CONFINE": "1"}))
    assert len(_files(data)) == 1
    assert head["engine"] == "external" and head["variant"] == "outside", out
    if confined:
        assert "REFUSED errno 30" in out and head["status"] == "ok", out
    else:
        assert "FORGED" in out and head["status"] == "failed" and "2 records of" in head["error"], out
    assert load.load(data).runs["engine"].to_list() == ["external"]


PLANTING = """
import os, shutil
settings = spec["variant"]["settings"]
for what, write in (
    ("record", lambda: (os.makedirs(os.path.join(settings["data"], "cpu-smoke"), exist_ok=True), shutil.copy(
        settings["genuine"], os.path.join(settings["data"], "cpu-smoke", os.path.basename(settings["genuine"]))))),
    ("module", lambda: open(settings["module"], "w").write("print('planted')\\n")),
):
    try:
        write()
        print(f"PLANTED {what}", file=sys.stderr, flush=True)
    except OSError as e:
        print(f"REFUSED {what} errno {e.errno}", file=sys.stderr, flush=True)
"""
"""An engine that copies a genuine torch record into the bench's data folder and writes a module into runners/,
saying on its standard error what it managed."""


def _planting(tmp_path: Path, data: Path, module: Path) -> Path:
    return _engine(tmp_path, PLANTING + STEPS, data=str(data), genuine=str(TUNED), module=str(module))


def _confinable() -> bool:
    """Whether this kernel lets the runner give an engine read-only views (confine.py): a real probe."""
    from runners.engines.external import confine

    try:
        hook = confine.read_only_hook([ROOT], lambda: None)
        return hook is not None and subprocess.run([sys.executable, "-c", "pass"], preexec_fn=hook).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.mark.skipif(not _confinable(), reason="this kernel refuses unprivileged user and mount namespaces")
def test_an_engine_cannot_write_into_the_data_folder_or_the_code(tmp_path: Path) -> None:
    """Where the kernel allows it, the engine sees the checkout and the data folder read-only: both writes fail with
    EROFS (even as root: its exec gains no capability to remount them), nothing appears, and the run is `ok`.
    Before: both files were written, and the planted record ranked."""
    data = tmp_path / "data"
    (data / "cpu-smoke").mkdir(parents=True)
    planted_module = ROOT / "runners" / "_planted_by_a_test_engine.py"
    try:
        head, _, out = _bench(data, _planting(tmp_path, data, planted_module), "outside")
        assert "REFUSED record errno 30" in out and "REFUSED module errno 30" in out, out
        assert head["status"] == "ok" and not planted_module.exists(), out
        assert json.loads(head["config"])["external"]["isolation"] == untrusted.WHOLE_ROOT
        assert load.load(data).runs["engine"].to_list() == ["external"]
    finally:
        planted_module.unlink(missing_ok=True)


@pytest.mark.skipif(not _confinable(), reason="this kernel refuses unprivileged user and mount namespaces")
def test_an_engine_writes_nowhere_but_its_own_home(tmp_path: Path) -> None:
    """Where the kernel allows it, the whole file system is read-only to the engine but its own home (HOME and
    TMPDIR, deleted after it): a file beside the bench's data (here in the test's folder, on /tmp) and one in a
    shared /dev/shm never appear, its home takes what it writes, and the record says how it was confined (issue 57).
    Before: only the checkout and the data folder were read-only, and both files were written."""
    outside = tmp_path / "outside" / "planted.txt"
    outside.parent.mkdir()
    shared = Path("/dev/shm") / f"fairfight-planted-{os.getpid()}"
    body = """
import os
settings = spec["variant"]["settings"]
for what, path in (("outside", settings["outside"]), ("shm", settings["shared"]),
                   ("home", os.path.join(os.environ["TMPDIR"], "scratch.txt"))):
    try:
        open(path, "w").write("planted")
        print(f"WROTE {what}", file=sys.stderr, flush=True)
    except OSError as e:
        print(f"REFUSED {what} errno {e.errno}", file=sys.stderr, flush=True)
"""
    try:
        variants = _engine(tmp_path, body + STEPS, outside=str(outside), shared=str(shared))
        head, _, out = _bench(tmp_path / "data", variants, "outside")
        assert "REFUSED outside errno 30" in out and "WROTE home" in out, out
        assert not outside.exists() and not shared.exists(), out  # its /dev/shm is a tmpfs of its own
        assert head["status"] == "ok" and json.loads(head["config"])["external"]["isolation"] == untrusted.WHOLE_ROOT
    finally:
        shared.unlink(missing_ok=True)


def test_an_engine_that_writes_into_the_data_folder_or_the_code_is_caught_and_its_file_set_aside(
    tmp_path: Path,
) -> None:
    """Without the read-only views (a kernel that refuses them; here switched off), the writes succeed. Before: the
    planted record ranked and nothing was said. Now the bench names both files, sets the planted one aside (a hidden
    name the loader skips), and the run is a failure record."""
    data = tmp_path / "data"
    planted_module = ROOT / "runners" / "_planted_by_a_test_engine.py"
    try:
        head, _, out = _bench(data, _planting(tmp_path, data, planted_module), "outside", FAIRFIGHT_NO_CONFINE="1")
        assert "PLANTED record" in out and "PLANTED module" in out, out
        assert head["engine"] == "external" and head["status"] == "failed", out
        assert "outside its own folder" in head["error"] and "_planted_by_a_test_engine.py (new)" in head["error"]
        assert f"cpu-smoke/{TUNED.name} (new)" in head["error"] and "(set aside)" in head["error"]
        assert (data / "cpu-smoke" / f".quarantined-{TUNED.name}").exists()
        loaded = load.load(data)
        assert loaded.runs["engine"].to_list() == ["external"] and loaded.rejected == []
    finally:
        planted_module.unlink(missing_ok=True)


def test_an_engine_gets_no_secrets_no_checkout_and_a_folder_of_its_own(tmp_path: Path) -> None:
    """The bench's environment holds planted credentials; the engine prints its whole environment as output lines
    (which a record keeps verbatim when it refuses them) and reports where it runs. Before: the values reached the
    result file. Now its environment is an allowlist, its working folder is its own, and /proc does not show it the
    runner's working directory or environment."""
    planted = {
        "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
        "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "TORCH_HUB_TOKEN": "sekrit-value-under-an-allowed-prefix",
    }
    variants = _engine(
        tmp_path,
        """
import os
for key, value in sorted(os.environ.items()):
    print(f"ENV {key}={value}", flush=True)
def readable(read, path):
    try:
        read(path)
    except OSError:
        return "denied"
    return "readable"
parent = f"/proc/{os.getppid()}"
where = {"cwd": os.getcwd(), "parent_cwd": readable(os.readlink, parent + "/cwd"),
         "parent_environ": readable(lambda p: open(p, "rb").read(), parent + "/environ"),
         "parent_fd": readable(os.listdir, parent + "/fd")}
print("WHERE " + json.dumps(where), flush=True)
"""
        + STEPS,
    )
    data = tmp_path / "data"
    proc = subprocess.run(
        [sys.executable, "-m", "runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, "--variants",
         str(variants), "--variant", "outside", "--steps", "12", "--data-dir", str(data)],
        cwd=ROOT, capture_output=True, text=True, env=os.environ | planted, timeout=600,
    )  # fmt: skip
    [path] = _files(data)
    stored = path.read_bytes()
    for name, value in planted.items():
        assert value.encode() not in stored, f"{name} reached the result file"
        assert value not in proc.stdout + proc.stderr, f"{name} reached the bench's output"
    head = layout.read(path).slice(0, 1).to_pylist()[0]
    kept = [r["text"] for r in json.loads(head["config"])["external"]["rejected_lines"]]
    env = dict(t.removeprefix("ENV ").split("=", 1) for t in kept if t.startswith("ENV "))
    assert "fairfight-engine-" in env["HOME"] and env["TMPDIR"].startswith(env["HOME"])
    assert not any(value.startswith(str(ROOT)) for key, value in env.items() if key not in ("PATH",))
    where = json.loads(next(t for t in kept if t.startswith("WHERE ")).removeprefix("WHERE "))
    assert not Path(where["cwd"]).resolve().is_relative_to(ROOT) and "fairfight-engine-" in where["cwd"]
    if os.geteuid() != 0:  # root may read any process's /proc entries (CAP_SYS_PTRACE): the threat model says so
        assert where["parent_cwd"] == where["parent_environ"] == where["parent_fd"] == "denied", where


def test_a_daemon_an_engine_leaves_behind_ends_with_the_run(tmp_path: Path) -> None:
    """It starts a process in a session of its own (setsid) that keeps writing, then finishes its steps and exits.
    Before: the daemon outlived the bench and went on writing. Now it is ended with the run (the runner and the
    bench are subreapers: an orphan is re-parented to them and killed)."""
    marker = f"fairfight-test-daemon-{os.getpid()}-{tmp_path.name}"
    variants = _engine(
        tmp_path,
        """
import os, subprocess
settings = spec["variant"]["settings"]
beats = os.path.join(os.environ["TMPDIR"], "beats.txt")  # its own home: the one place it may write
loop = "import sys, time\\nwhile True:\\n    open(sys.argv[1], 'a').write('beat\\\\n')\\n    time.sleep(0.1)\\n"
subprocess.Popen([sys.executable, "-c", loop, beats, settings["marker"]], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while not os.path.exists(beats):
    pass
print("DAEMON BEATING", file=sys.stderr, flush=True)
"""
        + STEPS,
        marker=marker,
    )
    try:
        head, _, out = _bench(tmp_path / "data", variants, "outside")
        assert head["status"] == "ok", out
        assert "DAEMON BEATING" in out and processes_with(marker) == [], "the daemon outlived the bench"
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_an_engine_that_exits_0_having_measured_nothing_is_not_ok(tmp_path: Path) -> None:
    """Before: recorded `ok`. Now `failed`, saying it delivered no steady steps; one that stops early says how far
    it got."""
    head, rows, out = _bench(tmp_path / "data", _engine(tmp_path, "pass\n"), "outside")
    assert head["status"] == "failed" and "delivered no steady steps" in head["error"], out
    assert [r["value"] for r in rows if r["metric"] == "steps_completed"] == [0.0]
    short = _engine(tmp_path, STEPS.replace('range(work["steps"])', 'range(work["steps"] - 1)'))
    head, _, out = _bench(tmp_path / "data2", short, "outside")
    assert head["status"] == "failed" and "after 11 of the workload's 12 steps" in head["error"], out


def test_any_line_at_all_is_judged_and_never_costs_the_rows(tmp_path: Path) -> None:
    """A line nested 30,000 deep, one that is not UTF-8 and one of 1 MB among good rows. Before: the nested line
    killed the runner (RecursionError) and every row was lost. Now each is refused by line number, the rows kept."""
    variants = _engine(
        tmp_path,
        """
print("[" * 30000 + "]" * 30000, flush=True)
sys.stdout.buffer.write(b'{"engine_version": "caf\\xe9"}\\n'); sys.stdout.flush()
print("x" * (1 << 20), flush=True)
"""
        + STEPS,
    )
    head, rows, out = _bench(tmp_path / "data", variants, "outside")
    assert head["status"] == "failed", out
    error = head["error"]
    assert "line 1: not JSON (nested too deeply)" in error and "line 2: not UTF-8 text" in error, error
    assert "line 3: 1,048,576 bytes, longer than the 65,536 a line may be" in error, error
    kept = json.loads(head["config"])["external"]["rejected_lines"]
    assert [r["line"] for r in kept] == [1, 2, 3] and len(kept[2]["text"]) <= 301  # cut, not kept whole
    assert len([r for r in rows if r["metric"] == "step_time_s"]) == 12


def test_a_child_holding_the_output_open_cannot_stretch_the_budget(tmp_path: Path) -> None:
    """It writes two steps, leaves a child (in a session of its own) holding its standard output, and sleeps. Before:
    the runner read on until the child let go (a 5 s budget became 426 s; here it would never end). Now the clock
    is checked between reads: stopped at its budget, `timeout`, rows kept, the child ended."""
    marker = f"fairfight-test-holder-{os.getpid()}-{tmp_path.name}"
    variants = _engine(
        tmp_path,
        """
import subprocess, time
for step in range(2):
    print(json.dumps({"trial": 0, "step": step, "phase": "warmup", "metric": "step_time_s", "value": 0.1,
                      "unit": "s"}), flush=True)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(100000)", spec["variant"]["settings"]["marker"]],
                 start_new_session=True)
time.sleep(100000)
""",
        marker=marker,
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, "--variants",
             str(variants), "--variant", "outside", "--steps", "12", "--time-budget", "1", "--data-dir",
             str(tmp_path / "data")],
            cwd=ROOT, capture_output=True, text=True, timeout=400,
        )  # fmt: skip
        [path] = _files(tmp_path / "data")
        head = layout.read(path).slice(0, 1).to_pylist()[0]
        assert head["status"] == "timeout" and "overran its time budget" in head["error"], proc.stderr[-2000:]
        assert processes_with(marker) == []
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


MEASURE = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)  # KiB: the largest process of the bench's tree
"""


def test_a_600_mb_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """One line of 600 MB, written in 1 MB pieces. Before: read whole (gigabytes of memory). Now the runner reads
    64 KiB at a time, stops the engine past 64 MiB of output, and no process of the bench takes 512 MiB."""
    variants = _engine(
        tmp_path,
        """
piece = "x" * (1 << 20)
for _ in range(600):
    sys.stdout.write(piece)
sys.stdout.write("\\n")
""",
    )
    data = tmp_path / "data"
    bench = [sys.executable, "-m", "runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, "--variants",
             str(variants), "--variant", "outside", "--steps", "12", "--data-dir", str(data)]  # fmt: skip
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE, *bench], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True
    )
    [path] = _files(data)
    head = layout.read(path).slice(0, 1).to_pylist()[0]
    assert head["status"] == "failed" and "wrote more than 64 MiB" in head["error"], head["error"]
    assert int(measured.stdout.split()[-1]) < 512 * 1024, f"{int(measured.stdout.split()[-1]) >> 10} MiB"


def test_an_engine_cannot_say_what_the_bench_counts(tmp_path: Path) -> None:
    """`steps_completed` of 1,000 after 12 steps, a steps/s figure of its own, a step beyond the workload, a trial it
    was not asked for, a step in the wrong phase and a second time for one step. Before: all recorded (the steps
    count as written). Now each is refused by line, and the bench counts the steps itself."""
    variants = _engine(
        tmp_path,
        STEPS
        + """
def row(**values):
    print(json.dumps({"trial": 0, "step": None, "phase": "run", "unit": "s"} | values), flush=True)
row(metric="steps_completed", value=1000, unit="steps")
row(metric="steps_per_s", value=1e6, unit="steps/s")
row(step=500, phase="steady", metric="step_time_s", value=0.01)
row(trial=3, step=11, phase="steady", metric="step_time_s", value=0.01)
row(step=0, phase="steady", metric="loss", value=5.0, unit="nats")
row(step=11, phase="steady", metric="step_time_s", value=0.001)
""",
    )
    head, rows, out = _bench(tmp_path / "data", variants, "outside")
    error = head["error"]
    assert head["status"] == "failed" and "6 output line(s) refused" in error, out
    assert "steps_completed 1000, but trial 0 has 12 step time(s)" in error
    assert "'steps_per_s' is not a training run's" in error
    kept = {r["line"]: r["problem"] for r in json.loads(head["config"])["external"]["rejected_lines"]}
    problems = " ".join(kept.values())
    assert "'step': 500, but the workload runs steps 0 to 11" in problems
    assert "'trial': 3, but the workload runs trials 0 to 0" in problems
    assert (
        "'steady', but step 0 is a warmup step" in problems and "a second 'step_time_s' of trial 0, step 11" in problems
    )
    assert [r["value"] for r in rows if r["metric"] == "steps_completed"] == [12.0]
    assert not [r for r in rows if r["metric"] == "steps_per_s"]


def test_an_engines_escape_sequences_never_reach_the_operators_terminal(tmp_path: Path) -> None:
    """Escape sequences on its standard error: one that sets the terminal's clipboard (OSC 52), one that clears the
    screen, a carriage return that overwrites a line. Before: passed to the terminal as they were. Now shown as
    ⟨U+001B⟩, ⟨U+000D⟩: the log says what the engine wrote, and the terminal obeys none of it."""
    variants = _engine(
        tmp_path,
        """
sys.stderr.write("\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07 clipboard\\n\\x1b[2J cleared\\nfake ok\\r all good\\n")
sys.stderr.flush()
"""
        + STEPS,
    )
    head, _, out = _bench(tmp_path / "data", variants, "outside")
    assert head["status"] == "ok", out
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "⟨U+001B⟩]52;c;Y3VybCBldmlsIHwgc2g=⟨U+0007⟩ clipboard" in out and "fake ok⟨U+000D⟩ all good" in out
