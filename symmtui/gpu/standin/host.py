"""The stand-in's simulated host: recorded or generated NVML answers, a load driver for the demo, fault hooks."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from symmtui.gpu.standin.codec import Struct, from_json
from symmtui.gpu.standin.errors import (
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_UNINITIALIZED,
    NVMLError,
)

MiB = 1024 * 1024
FAKE_PID_BASE = 4_194_000  # above most pid_max settings, so psutil will not find a real process by chance


class ProcEntry(msgspec.Struct):
    """One process holding memory on one simulated GPU."""

    pid: int
    used: int
    name: str
    kind: str = "C"  # "C" compute, "G" graphics


class _Slow(msgspec.Struct):
    seconds: float
    gate: threading.Event | None
    entered: threading.Event | None


class StandinHost:
    """State behind one stand-in module: answers per call, per device and per pair, plus dynamic load."""

    def __init__(self, scenario: Mapping[str, Any], clock: Callable[[], float]) -> None:
        self.name: str = str(scenario.get("name", "custom"))
        self.clock = clock
        self.system: dict[str, Any] = dict(scenario.get("system", {}))
        self.devices: list[dict[str, Any]] = [dict(d) for d in scenario.get("devices", [])]
        self.pairs: dict[str, dict[str, Any]] = {k: dict(v) for k, v in scenario.get("pairs", {}).items()}
        self.model: dict[str, Any] = dict(scenario.get("model", {}))
        self.lock = threading.RLock()
        self.calls: Counter[str] = Counter()
        self.init_count = 0
        self.procs: list[dict[int, ProcEntry]] = [{} for _ in self.devices]
        self.load_fraction = 0.0
        self.utilization: float | None = None
        self.utilization_of: dict[int, float] = {}  # per-GPU pins, over the all-GPU one
        self.dynamic = bool(scenario.get("dynamic", False))
        self._ramp: tuple[float, float, Sequence[int] | int | None, str] | None = None
        # faults
        self.init_error: int | None = None
        self.lost: set[int] = set()
        self.unsupported: dict[str, set[int] | None] = {}
        self.slow_calls: dict[str, _Slow] = {}

    # ---- the demo's driver API -------------------------------------------------------------
    @property
    def count(self) -> int:
        """How many GPUs the host has."""
        return len(self.devices)

    def set_load(
        self,
        fraction: float,
        pids: Sequence[int] | int | None = None,
        *,
        name: str = "python3",
        _keep_ramp: bool = False,
    ) -> None:
        """Fill every GPU to ``fraction`` of the model's footprint, held by ``pids`` (one per GPU, or one for all).

        ``fraction`` 0 removes the load's processes. Other processes (``add_process``) stay.
        """
        fraction = min(max(float(fraction), 0.0), 1.0)
        with self.lock:
            if not _keep_ramp:
                self._ramp = None
            self.dynamic = True
            self.load_fraction = fraction
            for i, procs in enumerate(self.procs):
                for pid in [p for p, e in procs.items() if e.name.startswith("load:")]:
                    del procs[pid]
                if fraction <= 0.0:
                    continue
                if isinstance(pids, int):
                    pid = pids
                elif pids is not None and len(pids) > 0:
                    pid = pids[i % len(pids)]
                else:
                    pid = FAKE_PID_BASE + i
                used = int(self.footprint(i) * fraction) // MiB * MiB
                procs[pid] = ProcEntry(pid, used, f"load:{name}")

    set_load_fraction = set_load

    def load_over(
        self, seconds: float, pids: Sequence[int] | int | None = None, *, name: str = "python3"
    ) -> None:
        """Fill memory from 0 to the full footprint over ``seconds`` of the host's clock (a model loading).

        Every read after this recomputes the fraction from the clock; ``set_load`` or
        ``clear_processes`` ends the ramp.
        """
        with self.lock:
            self.dynamic = True
            self._ramp = (self.clock(), max(float(seconds), 1e-6), pids, name)
        self._tick()

    def _tick(self) -> None:
        ramp = self._ramp
        if ramp is None:
            return
        start, seconds, pids, name = ramp
        fraction = min(1.0, max(0.0, (self.clock() - start) / seconds))
        self.set_load(fraction, pids, name=name, _keep_ramp=True)

    def footprint(self, index: int) -> int:
        """Bytes the simulated model takes on one GPU when fully loaded (weights + KV cache + graphs)."""
        total, reserved = self._mem_base(index)
        share = float(self.model.get("mem_fraction", 0.88))
        return int((total - reserved) * share)

    def add_process(self, gpu: int, pid: int, used_bytes: int, name: str = "python3", kind: str = "C") -> None:
        """A process holding ``used_bytes`` on GPU ``gpu`` (an orphan, say) until removed."""
        with self.lock:
            self.dynamic = True
            self.procs[gpu][pid] = ProcEntry(pid, int(used_bytes), name, kind)

    def remove_process(self, pid: int) -> None:
        """Drop a pid from every GPU (the process exited)."""
        with self.lock:
            for procs in self.procs:
                procs.pop(pid, None)

    def clear_processes(self) -> None:
        """No process holds memory anywhere; load back to 0."""
        with self.lock:
            self._ramp = None
            for procs in self.procs:
                procs.clear()
            self.load_fraction = 0.0

    def set_utilization(self, percent: float | None, index: int | None = None) -> None:
        """Pin GPU utilisation of every GPU, or of GPU ``index`` only (None: follow the load model again)."""
        with self.lock:
            self.dynamic = True
            if index is None:
                self.utilization = percent
                self.utilization_of.clear()
            elif percent is None:
                self.utilization_of.pop(index, None)
            else:
                self.utilization_of[index] = percent

    # ---- fault hooks -----------------------------------------------------------------------
    def fail_init(self, code: int | None) -> None:
        """``nvmlInit`` raises ``NVMLError(code)`` (LibraryNotFound, DriverNotLoaded, NoPermission...); None heals."""
        self.init_error = code

    def lose_gpu(self, index: int) -> None:
        """GPU ``index`` falls off the bus: every call on it raises NVMLError_GpuIsLost."""
        with self.lock:
            self.lost.add(index)

    def not_supported(self, fn: str, gpu: int | None = None) -> None:
        """``fn`` answers NVMLError_NotSupported (on one GPU, or on all when ``gpu`` is None)."""
        with self.lock:
            if gpu is None:
                self.unsupported[fn] = None
            else:
                current = self.unsupported.get(fn, set())
                if current is not None:
                    current.add(gpu)
                    self.unsupported[fn] = current

    def slow(
        self,
        fn: str,
        seconds: float,
        gate: threading.Event | None = None,
        entered: threading.Event | None = None,
    ) -> None:
        """``fn`` takes ``seconds`` (or until ``gate`` is set, at most ``seconds``) before answering.

        ``entered`` is set each time a caller is inside the slow call (tests wait on it, not on time).
        """
        with self.lock:
            self.slow_calls[fn] = _Slow(seconds, gate, entered)

    def heal(self) -> None:
        """Remove every injected fault."""
        with self.lock:
            self.init_error = None
            self.lost.clear()
            self.unsupported.clear()
            self.slow_calls.clear()

    # ---- what the module's functions use --------------------------------------------------
    def enter(self, fn: str, gpu: int | None = None, *, needs_init: bool = True) -> None:
        """Bookkeeping before every call: count it, apply slowness, refuse when uninitialised, lost or unsupported."""
        self.calls[fn] += 1
        slow = self.slow_calls.get(fn)
        if slow is not None:
            if slow.entered is not None:
                slow.entered.set()
            if slow.gate is not None:
                slow.gate.wait(slow.seconds)
            else:
                threading.Event().wait(slow.seconds)
        if needs_init and self.init_count <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        if gpu is not None and gpu in self.lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        if fn in self.unsupported:
            which = self.unsupported[fn]
            if which is None or (gpu is not None and gpu in which):
                raise NVMLError(NVML_ERROR_NOT_SUPPORTED)

    @staticmethod
    def answer(table: Mapping[str, Any], key: str, missing: int = NVML_ERROR_NOT_SUPPORTED) -> Any:
        """Replay one stored answer: its value (structs rebuilt fresh), or raise its error."""
        entry = table.get(key)
        if entry is None:
            raise NVMLError(missing)
        if "e" in entry:
            raise NVMLError(int(entry["e"]))
        return from_json(entry["v"])

    def device(self, index: int, key: str, missing: int = NVML_ERROR_NOT_SUPPORTED) -> Any:
        """The stored answer for device ``index``."""
        return self.answer(self.devices[index], key, missing)

    def pair(self, a: int, b: int, key: str) -> Any:
        """The stored answer for a pair of devices (stored once per unordered pair)."""
        table = self.pairs.get(f"{a}-{b}") or self.pairs.get(f"{b}-{a}") or {}
        return self.answer(table, key)

    # ---- dynamic values --------------------------------------------------------------------
    def _mem_base(self, index: int) -> tuple[int, int]:
        mem = self.device(index, "nvmlDeviceGetMemoryInfo:v2")
        return int(mem.total), int(mem.reserved)

    def memory(self, index: int, v2: bool) -> Struct:
        """Memory as NVML's v1 or v2 struct, from the processes when the host is dynamic."""
        base = self.device(index, "nvmlDeviceGetMemoryInfo:v2" if v2 else "nvmlDeviceGetMemoryInfo")
        if not self.dynamic:
            return base  # type: ignore[no-any-return]
        self._tick()
        total, reserved = self._mem_base(index)
        with self.lock:
            used = sum(p.used for p in self.procs[index].values())
        used = min(used, total - reserved)
        free = total - reserved - used
        if v2:
            return Struct(version=getattr(base, "version", 0x02000028), total=total, reserved=reserved, free=free, used=used)
        return Struct(total=total, free=free, used=used + reserved)

    def processes(self, index: int, kind: str) -> list[Struct]:
        """NVML process entries of one kind ("C" or "G") on one GPU."""
        if not self.dynamic:
            key = "nvmlDeviceGetComputeRunningProcesses" if kind == "C" else "nvmlDeviceGetGraphicsRunningProcesses"
            return list(self.device(index, key))
        self._tick()
        with self.lock:
            entries = [p for p in self.procs[index].values() if p.kind == kind or p.kind == "C+G"]
        return [
            Struct(pid=p.pid, usedGpuMemory=p.used, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
            for p in entries
        ]

    def process_name(self, pid: int) -> str:
        """The name NVML would give a pid, from the simulated processes."""
        with self.lock:
            for procs in self.procs:
                entry = procs.get(pid)
                if entry is not None:
                    return entry.name.removeprefix("load:")
        return str(self.answer(self.system, f"nvmlSystemGetProcessName:{pid}", missing=6))  # 6: NOT_FOUND

    def util(self, index: int) -> float:
        """Utilisation percent: pinned, or a loading-shaped curve of the load fraction and the clock."""
        with self.lock:
            pinned = self.utilization_of.get(index, self.utilization)
            fraction = self.load_fraction
            busy = bool(self.procs[index])
        if pinned is not None:
            return pinned
        if not busy or fraction <= 0.0:
            return 0.0
        if fraction < 1.0:  # loading weights: copies, little compute
            return 3.0 + 4.0 * (0.5 + 0.5 * math.sin(self.clock() * 1.3 + index))
        return 0.0

    def temperature(self, index: int) -> int:
        """Degrees C following utilisation."""
        base = int(self.model.get("idle_temp", 31))
        return base + index % 3 + int(self.util(index) * 0.4) + int(self.load_fraction * 4)

    def power_mw(self, index: int) -> int:
        """Milliwatts following utilisation and memory held."""
        idle = float(self.model.get("idle_power_w", 34.0))
        limit = float(self.model.get("power_limit_w", 600.0))
        watts = idle + self.load_fraction * 22.0 + (limit - idle) * 0.85 * self.util(index) / 100.0
        return int(watts * 1000)

    def pcie_gen(self, index: int) -> int:
        """Current PCIe generation: idle GPUs drop the link to gen 1 to save power, as real ones do."""
        max_gen = int(self.device(index, "nvmlDeviceGetMaxPcieLinkGeneration"))
        with self.lock:
            busy = bool(self.procs[index])
        return max_gen if busy or self.util(index) > 0 else 1
