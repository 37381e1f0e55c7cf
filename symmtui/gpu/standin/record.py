"""Record every NVML answer symmtui uses (errors as codes) from a real host, as a stand-in scenario file.

Usage on a GPU host: ``python -m symmtui.gpu.standin.record OUT.json [--name NAME]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from symmtui.gpu.standin.codec import result_key, to_json

CPU_WORDS = max(16, -(-(os.cpu_count() or 1) // 64))


class Recorder:
    """Calls pynvml functions and keeps each answer, error code or value, with its time."""

    def __init__(self, nvml: ModuleType) -> None:
        self.m = nvml
        self.timings: dict[str, float] = {}

    def call(self, table: dict[str, Any], key: str, fn: Callable[..., Any]) -> Any:
        t0 = time.perf_counter()
        try:
            value = fn()
        except self.m.NVMLError as exc:
            table[key] = {"e": int(exc.value), "msg": str(exc)}
            return exc
        finally:
            self.timings[key] = max(self.timings.get(key, 0.0), time.perf_counter() - t0)
        table[key] = {"v": to_json(value)}
        return value


def record(nvml: ModuleType, name: str) -> dict[str, Any]:
    """The whole recording as a dict (see tests/fixtures/nvml/README for the format)."""
    rec = Recorder(nvml)
    t0 = time.perf_counter()
    nvml.nvmlInit()
    init_s = time.perf_counter() - t0
    system: dict[str, Any] = {}
    for fn in ("nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion", "nvmlSystemGetNVMLVersion"):
        rec.call(system, fn, getattr(nvml, fn))
    count = int(nvml.nvmlDeviceGetCount())
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    devices: list[dict[str, Any]] = []
    plain = (
        "nvmlDeviceGetName nvmlDeviceGetUUID nvmlDeviceGetPciInfo nvmlDeviceGetMinorNumber "
        "nvmlDeviceGetCudaComputeCapability nvmlDeviceGetUtilizationRates nvmlDeviceGetPowerUsage "
        "nvmlDeviceGetEnforcedPowerLimit nvmlDeviceGetPowerManagementLimit nvmlDeviceGetCurrPcieLinkGeneration "
        "nvmlDeviceGetCurrPcieLinkWidth nvmlDeviceGetMaxPcieLinkGeneration nvmlDeviceGetMaxPcieLinkWidth "
        "nvmlDeviceGetMigMode nvmlDeviceGetPersistenceMode nvmlDeviceGetComputeRunningProcesses "
        "nvmlDeviceGetGraphicsRunningProcesses nvmlDeviceGetNumaNodeId"
    ).split()
    for h in handles:
        dev: dict[str, Any] = {}
        for fn in plain:
            rec.call(dev, fn, lambda fn=fn, h=h: getattr(nvml, fn)(h))
        rec.call(dev, "nvmlDeviceGetMemoryInfo", lambda h=h: nvml.nvmlDeviceGetMemoryInfo(h))
        rec.call(
            dev,
            "nvmlDeviceGetMemoryInfo:v2",
            lambda h=h: nvml.nvmlDeviceGetMemoryInfo(h, version=nvml.nvmlMemory_v2),
        )
        rec.call(dev, "nvmlDeviceGetTemperature:0", lambda h=h: nvml.nvmlDeviceGetTemperature(h, 0))
        rec.call(dev, "nvmlDeviceGetCpuAffinity", lambda h=h: list(nvml.nvmlDeviceGetCpuAffinity(h, CPU_WORDS)))
        for scope in (0, 1):
            rec.call(
                dev,
                result_key("nvmlDeviceGetCpuAffinityWithinScope", scope),
                lambda h=h, s=scope: list(nvml.nvmlDeviceGetCpuAffinityWithinScope(h, CPU_WORDS, s)),
            )
            rec.call(
                dev,
                result_key("nvmlDeviceGetMemoryAffinity", scope),
                lambda h=h, s=scope: list(nvml.nvmlDeviceGetMemoryAffinity(h, 4, s)),
            )
        for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
            state = rec.call(
                dev, result_key("nvmlDeviceGetNvLinkState", link), lambda h=h, k=link: nvml.nvmlDeviceGetNvLinkState(h, k)
            )
            if isinstance(state, nvml.NVMLError):
                break
            for fn in ("nvmlDeviceGetNvLinkVersion", "nvmlDeviceGetNvLinkRemoteDeviceType", "nvmlDeviceGetNvLinkRemotePciInfo"):
                rec.call(dev, result_key(fn, link), lambda fn=fn, h=h, k=link: getattr(nvml, fn)(h, k))
        devices.append(dev)
    for dev in devices:  # the names NVML gives the pids it listed
        for key in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            for proc in dev.get(key, {}).get("v", []) or []:
                pid = int(proc["__struct__"]["pid"])
                rec.call(system, result_key("nvmlSystemGetProcessName", pid), lambda p=pid: nvml.nvmlSystemGetProcessName(p))
    pairs: dict[str, dict[str, Any]] = {}
    for a in range(count):
        for b in range(count):
            if a == b:
                continue
            pair: dict[str, Any] = {}
            rec.call(
                pair,
                "nvmlDeviceGetTopologyCommonAncestor",
                lambda a=a, b=b: nvml.nvmlDeviceGetTopologyCommonAncestor(handles[a], handles[b]),
            )
            for idx in range(5):
                rec.call(
                    pair,
                    result_key("nvmlDeviceGetP2PStatus", idx),
                    lambda a=a, b=b, i=idx: nvml.nvmlDeviceGetP2PStatus(handles[a], handles[b], i),
                )
            pairs[f"{a}-{b}"] = pair
    nvml.nvmlShutdown()
    return {
        "name": name,
        "description": f"recorded from a real host ({count} GPUs) by symmtui.gpu.standin.record",
        "recorded": {
            "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": platform.node(),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "cpu_words": CPU_WORDS,
            "nvml_init_s": init_s,
            "timings_s": rec.timings,
        },
        "dynamic": False,
        "system": system,
        "devices": devices,
        "pairs": pairs,
    }


def raw_timings(nvml: ModuleType, rounds: int) -> dict[str, float]:
    """Seconds per round of raw pynvml sampling calls over all GPUs (median over ``rounds``), for the notes."""
    nvml.nvmlInit()
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        calls: dict[str, Callable[[Any], Any]] = {
            "memory_v1": lambda h: nvml.nvmlDeviceGetMemoryInfo(h),
            "memory_v2": lambda h: nvml.nvmlDeviceGetMemoryInfo(h, version=nvml.nvmlMemory_v2),
            "utilization": lambda h: nvml.nvmlDeviceGetUtilizationRates(h),
            "temperature": lambda h: nvml.nvmlDeviceGetTemperature(h, 0),
            "power": lambda h: nvml.nvmlDeviceGetPowerUsage(h),
            "pcie_gen": lambda h: nvml.nvmlDeviceGetCurrPcieLinkGeneration(h),
            "compute_procs": lambda h: nvml.nvmlDeviceGetComputeRunningProcesses(h),
            "graphics_procs": lambda h: nvml.nvmlDeviceGetGraphicsRunningProcesses(h),
        }
        out: dict[str, float] = {}
        for name, fn in calls.items():
            samples = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                for h in handles:
                    try:
                        fn(h)
                    except nvml.NVMLError:
                        pass
                samples.append(time.perf_counter() - t0)
            samples.sort()
            out[f"{name}_all_gpus_median_s"] = samples[len(samples) // 2]
        t0 = time.perf_counter()
        n = 0
        for a in handles:
            for b in handles:
                if a is not b:
                    nvml.nvmlDeviceGetTopologyCommonAncestor(a, b)
                    n += 1
        out["common_ancestor_per_pair_s"] = (time.perf_counter() - t0) / max(n, 1)
        return out
    finally:
        nvml.nvmlShutdown()


def main(argv: list[str] | None = None) -> int:
    """Write the recording of this host's NVML answers to a JSON file."""
    parser = argparse.ArgumentParser(prog="python -m symmtui.gpu.standin.record", description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--name", default="recorded")
    parser.add_argument("--timings", type=int, default=0, help="also time N rounds of raw sampling calls")
    args = parser.parse_args(argv)
    try:
        import pynvml  # the real pynvml: only when recording a real GPU
    except ImportError:
        print("record: the Python binding is missing: pip install nvidia-ml-py", file=sys.stderr)
        return 3
    try:
        data = record(pynvml, args.name)
        if args.timings:
            data["recorded"]["raw_timings"] = raw_timings(pynvml, args.timings)
    except pynvml.NVMLError as exc:  # no driver, no library, no permission: nothing to record here
        print(f"record: NVML unavailable: {exc}", file=sys.stderr)
        return 3
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"record: cannot write {args.out} ({exc.strerror})", file=sys.stderr)
        return 2
    print(f"recorded {len(data['devices'])} GPUs to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
