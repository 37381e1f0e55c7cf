"""GPU sampling cost: one sample of every GPU, against raw pynvml calls and a no-cache baseline, and CPU at 1 Hz.

`python -m bench.gpu` runs on the 8x RTX PRO 6000 stand-in (targets: one sample < 5 ms, the
sampler < 1 % of one core at 1 Hz); `python -m bench.gpu --real` runs the same on the real NVML.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from symmtui.gpu.nvml import Nvml, psutil_lookup
from symmtui.gpu.sampler import GpuSampler
from symmtui.gpu.topology import read_topology

SAMPLE_TARGET_S = 0.005
CPU_TARGET = 0.01


def _median_cost(fn: Callable[[], object], rounds: int) -> tuple[float, float]:
    costs = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        costs.append(time.perf_counter() - t0)
    costs.sort()
    return statistics.median(costs), costs[int(len(costs) * 0.99) - 1]


def _raw_round(mod: Any, handles: list[Any]) -> Callable[[], None]:
    """The same NVML calls our sample makes, straight on the module: the floor under our wrapper."""

    v2 = mod.nvmlMemory_v2
    calls: list[tuple[Callable[..., object], tuple[object, ...], dict[str, object]]] = [
        (mod.nvmlDeviceGetMemoryInfo, (), {"version": v2}),
        (mod.nvmlDeviceGetUtilizationRates, (), {}),
        (mod.nvmlDeviceGetTemperature, (0,), {}),
        (mod.nvmlDeviceGetPowerUsage, (), {}),
        (mod.nvmlDeviceGetCurrPcieLinkGeneration, (), {}),
        (mod.nvmlDeviceGetCurrPcieLinkWidth, (), {}),
        (mod.nvmlDeviceGetComputeRunningProcesses, (), {}),
        (mod.nvmlDeviceGetGraphicsRunningProcesses, (), {}),
    ]

    def run() -> None:
        for h in handles:
            for fn, args, kw in calls:
                try:
                    fn(h, *args, **kw)
                except mod.NVMLError:
                    pass

    return run


def _cpu_share(nvml: Nvml, rate_hz: float, seconds: float) -> tuple[float, int]:
    """Process CPU seconds per sampler round, measured at ``rate_hz`` for ``seconds`` (main thread idle)."""
    sampler = GpuSampler(nvml, interval=1.0 / rate_hz)
    done = threading.Event()
    c0 = time.process_time()
    sampler.start()
    done.wait(seconds)
    sampler.stop()
    cpu = time.process_time() - c0
    snap = sampler.latest()
    rounds = snap.seq if snap is not None else 0
    return cpu / max(rounds, 1), rounds


def _fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:9.3f} ms"


def run(nvml: Nvml, mod: ModuleType | None, label: str, rounds: int, cpu_seconds: float) -> bool:
    """Measure and print; True when the targets are met."""
    if not nvml.available():
        print(nvml.unavailable_reason)
        return False
    n = nvml.device_count()
    init = nvml.init_seconds
    t0 = time.perf_counter()
    topo = read_topology(nvml)
    topo_s = time.perf_counter() - t0
    nvml.sample_all()  # warm: handles, process-name cache
    ours_med, ours_p99 = _median_cost(nvml.sample_all, rounds)
    nocache = Nvml(mod, process_lookup=psutil_lookup()) if mod is not None else Nvml(process_lookup=psutil_lookup())
    nocache.available()

    def nocache_round() -> None:
        nocache._proc_cache.clear()  # every pid looked up again, as a naive poller would
        nocache.sample_all()

    nocache_med, nocache_p99 = _median_cost(nocache_round, rounds)
    raw_med = raw_p99 = float("nan")
    raw_mod = mod if mod is not None else nvml.module
    if raw_mod is not None:
        handles = [raw_mod.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        raw_med, raw_p99 = _median_cost(_raw_round(raw_mod, handles), rounds)
    procs = sum(len(s.processes) for s in nvml.sample_all() if isinstance(s.processes, tuple))
    per_round, sampled = _cpu_share(nvml, 50.0, cpu_seconds)
    share_1hz = per_round * 1.0  # one round per second
    print(f"GPU sampling on {label}: {n} GPUs, {procs} processes holding memory, {rounds} rounds each")
    print(f"{'measure':<58}{'median':>12}{'p99':>13}")
    print(f"{'raw pynvml calls only (floor: 8 calls per GPU)':<58}{_fmt_ms(raw_med)}{_fmt_ms(raw_p99)}")
    print(f"{'ours: Nvml.sample_all (typed, NA, names cached)':<58}{_fmt_ms(ours_med)}{_fmt_ms(ours_p99)}")
    print(f"{'baseline: same, psutil lookup of every pid every round':<58}{_fmt_ms(nocache_med)}{_fmt_ms(nocache_p99)}")
    print(f"{'import pynvml (first use)':<58}{_fmt_ms(nvml.import_seconds)}")
    print(f"{'nvmlInit (first use)':<58}{_fmt_ms(init)}")
    print(f"{'topology, read once':<58}{_fmt_ms(topo_s)}   ({topo.matrix[0][1] if n > 1 else '-'} GPU0-GPU1)")
    print(
        f"sampler CPU: {per_round * 1000:.3f} ms of CPU per round ({sampled} rounds at 50 Hz over {cpu_seconds:g} s, "
        f"time.process_time) -> at 1 Hz {share_1hz * 100:.3f} % of one core"
    )
    ok_sample = ours_med < SAMPLE_TARGET_S
    ok_cpu = share_1hz < CPU_TARGET
    print(f"target one sample < {SAMPLE_TARGET_S * 1000:g} ms: {'met' if ok_sample else 'MISSED'}; "
          f"sampler < {CPU_TARGET * 100:g} % of a core at 1 Hz: {'met' if ok_cpu else 'MISSED'}")
    return ok_sample and ok_cpu


def main(argv: list[str] | None = None) -> int:
    """Stand-in by default; --real for the host's NVML."""
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__)
    parser.add_argument("--real", action="store_true", help="measure the real NVML of this host")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--cpu-seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.real:
        return 0 if run(Nvml(), None, "this host's NVML", args.rounds, args.cpu_seconds) else 1
    from symmtui.gpu.standin import load_standin

    mod = load_standin("rtx-pro-6000-x8-pcie")
    host = mod.standin
    # a loaded TP8 server: one real process (this one, so psutil really looks it up) and 7 more ranks
    host.set_load(1.0, pids=[os.getpid()] + [4_194_000 + i for i in range(1, 8)])
    nvml = Nvml(mod)
    return 0 if run(nvml, mod, "stand-in rtx-pro-6000-x8-pcie (loaded)", args.rounds, args.cpu_seconds) else 1


if __name__ == "__main__":
    sys.exit(main())
