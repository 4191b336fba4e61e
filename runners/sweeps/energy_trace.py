"""Record one GPU's NVML energy counter as a trace for the CPU tests (tests/runners/data/h200-nvml-energy-trace.json):
`nvmlDeviceGetTotalEnergyConsumption` and `nvmlDeviceGetPowerUsage` read every 5 ms, idle, then under a bf16 matmul
load, then idle again. Run on a bench host: `python3 -m runners.sweeps.energy_trace OUT.json`."""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from datetime import UTC, datetime

IDLE_S, LOAD_S, AFTER_S, EVERY_S = 2.0, 3.0, 1.0, 0.005


def main(out: str) -> int:
    import torch

    from runners import energy

    nvml = energy.Nvml.open()
    if nvml is None:
        raise SystemExit("no NVML on this host")
    uuid, handle = nvml.handles()[0]
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()  # CUDA and cuBLAS started before the trace: the idle part is idle
    readings: list[tuple[float, int | None, int | None]] = []
    stop = threading.Event()
    t0 = time.perf_counter()

    def read() -> None:
        while not stop.is_set():
            readings.append((time.perf_counter() - t0, nvml.total_energy_mj(handle), nvml.power_mw(handle)))
            time.sleep(EVERY_S)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(IDLE_S)
    load_from = time.perf_counter() - t0
    while time.perf_counter() - t0 < load_from + LOAD_S:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
    load_to = time.perf_counter() - t0
    time.sleep(AFTER_S)
    stop.set()
    reader.join()
    changes = [t for (t, e, _), (_, prev, _) in zip(readings[1:], readings, strict=False) if e != prev]
    gaps = sorted(b - a for a, b in itertools.pairwise(changes))
    doc = {
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0),
        "uuid": uuid,
        "command": "python3 -m runners.sweeps.energy_trace",
        "idle_s": IDLE_S,
        "load_from_s": round(load_from, 6),
        "load_to_s": round(load_to, 6),
        "counter_update_s": round(gaps[len(gaps) // 2], 6) if gaps else None,
        "readings": [[round(t, 6), e, p] for t, e, p in readings],
    }
    with open(out, "w") as f:
        json.dump(doc, f)
    print(f"{len(readings)} readings, counter updated every {doc['counter_update_s']} s (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
