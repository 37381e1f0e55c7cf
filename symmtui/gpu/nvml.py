"""The one NVML caller: lazy init, every NVML error turned into an explicit NA (results typed in gpu.results)."""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Final

from msgspec.structs import replace

from symmtui.gpu.families import family, sm_name
from symmtui.gpu.results import NA, CallStats, GpuInfo, GpuProcess, GpuSample, NAType, NvLink

# NVML's C enum values (stable across releases); pynvml 13's NVML_P2P_CAPS_INDEX_READ is a tuple by a typo.
NVML_ERROR_UNINITIALIZED: Final = 1
NVML_ERROR_INVALID_ARGUMENT: Final = 2
NVML_ERROR_NOT_SUPPORTED: Final = 3
NVML_ERROR_NO_PERMISSION: Final = 4
NVML_ERROR_DRIVER_NOT_LOADED: Final = 9
NVML_ERROR_LIBRARY_NOT_FOUND: Final = 12
NVML_ERROR_FUNCTION_NOT_FOUND: Final = 13
NVML_ERROR_GPU_IS_LOST: Final = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH: Final = 18
NVML_MEMORY_V2: Final = 0x02000028
NVML_TEMPERATURE_GPU: Final = 0
NVML_AFFINITY_SCOPE_NODE: Final = 0
NVLINK_DEVICE_TYPE_GPU: Final = 0
NVLINK_DEVICE_TYPE_SWITCH: Final = 2
P2P_CAPS: Final[dict[str, int]] = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3, "pci": 4}
TOPOLOGY_LEVELS: Final[dict[int, str]] = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
UNKNOWN_BUS: Final = "FFFFFFFF:FF:FF.0"
MAX_NVLINKS: Final = 36
STANDIN_ENV: Final = "SYMMTUI_NVML_STANDIN"


class _GpuLost(Exception):
    """Internal: NVML said GPU is lost in the middle of a read (never leaves this module)."""


_REASONS: Final[dict[int, str]] = {
    NVML_ERROR_LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 not found (no NVIDIA driver installed on this host?)",
    NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel driver is not loaded (nvidia-smi will say the same)",
    NVML_ERROR_LIB_RM_VERSION_MISMATCH: "driver/library version mismatch (the driver was upgraded: reboot or reload the nvidia module)",
    NVML_ERROR_NO_PERMISSION: "no permission to open the GPUs (check /dev/nvidia* and your groups)",
    NVML_ERROR_FUNCTION_NOT_FOUND: "the installed libnvidia-ml lacks a required function (driver too old for nvidia-ml-py)",
}


_ANSWER_ERRORS: Final[tuple[type[Exception], ...]] = (AttributeError, TypeError, ValueError, OSError)
"""Errors one NVML call may raise besides NVMLError that mean "no usable answer" (bad types from a binding bug)."""


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


ProcessLookup = Callable[[int], tuple["str | NAType", "tuple[str, ...] | NAType"]]


def psutil_lookup() -> ProcessLookup:
    """Name and command line of a pid through psutil; gone or access denied -> NA."""
    import psutil  # type: ignore[import-untyped,unused-ignore]  # not at the top: `patch` runs without psutil

    def lookup(pid: int) -> tuple[str | NAType, tuple[str, ...] | NAType]:
        try:
            proc = psutil.Process(pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
            return NA, NA
        name: str | NAType
        cmdline: tuple[str, ...] | NAType
        try:
            name = proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            name = NA
        try:
            cmdline = tuple(proc.cmdline()) or NA
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            cmdline = NA
        return name, cmdline

    return lookup


class Nvml:
    """Thread-safe NVML access. Nothing here raises to the caller: errors become NA or a state.

    ``module`` is the pynvml module to use. Default: the stand-in named by $SYMMTUI_NVML_STANDIN
    when set (the demo), else ``import pynvml`` on first use. Tests pass a stand-in from
    :func:`symmtui.gpu.standin.load_standin`.
    """

    def __init__(
        self,
        module: ModuleType | None = None,
        *,
        process_lookup: ProcessLookup | None = None,
        import_name: str = "pynvml",
    ) -> None:
        self._module = module
        self._import_name = import_name
        self._m: Any = None
        self._lock = threading.RLock()
        self._tried = False
        self._reason: str | None = None
        self._init_seconds = 0.0
        self._import_seconds = 0.0
        self._count = 0
        self._handles: list[Any] = []
        self._infos: tuple[GpuInfo, ...] | None = None
        self._lost: set[int] = set()
        self._lookup = process_lookup
        self._proc_cache: dict[int, tuple[str | NAType, tuple[str, ...] | NAType]] = {}
        self._tls = threading.local()  # call statistics per thread: the sampler's are its own
        self._answer_errors: tuple[type[Exception], ...] = _ANSWER_ERRORS

    # ---- state -------------------------------------------------------------------------------
    def _ensure(self) -> bool:
        if self._tried:
            return self._reason is None
        with self._lock:
            if self._tried:
                return self._reason is None
            self._reason = self._init()
            self._tried = True
            return self._reason is None

    def _init(self) -> str | None:
        t0 = time.perf_counter()
        mod = self._module
        scenario = os.environ.get(STANDIN_ENV, "").strip()
        if mod is None and scenario:
            # the stand-in pynvml: only with $SYMMTUI_NVML_STANDIN set
            from symmtui.gpu.standin import shared_standin

            try:
                mod = shared_standin(scenario)
            except (KeyError, OSError, ValueError) as exc:
                return f"NVML unavailable: stand-in {scenario!r} from ${STANDIN_ENV} cannot load ({exc})"
        if mod is None:
            try:
                mod = importlib.import_module(self._import_name)
            except ImportError as exc:
                return f"NVML unavailable: the Python binding is missing ({exc}; pip install nvidia-ml-py)"
            self._import_seconds = time.perf_counter() - t0
        self._m = mod
        # pynvml raises this (not an NVMLError) when the driver lacks a versioned function it calls
        mismatch = getattr(mod, "NVMLLibraryMismatchError", None)
        if isinstance(mismatch, type) and issubclass(mismatch, Exception):
            self._answer_errors = (*_ANSWER_ERRORS, mismatch)
        t0 = time.perf_counter()
        try:
            mod.nvmlInit()
        except mod.NVMLError as exc:
            code = int(getattr(exc, "value", -1))
            return f"NVML unavailable: {_REASONS.get(code, str(exc) or f'NVML error {code}')}"
        except OSError as exc:
            return f"NVML unavailable: {exc}"
        finally:
            self._init_seconds = time.perf_counter() - t0
        try:
            self._count = int(mod.nvmlDeviceGetCount())
        except mod.NVMLError as exc:
            return f"NVML unavailable: cannot count GPUs ({exc})"
        for i in range(self._count):
            try:
                self._handles.append(mod.nvmlDeviceGetHandleByIndex(i))
            except mod.NVMLError as exc:
                self._handles.append(None)
                if int(getattr(exc, "value", -1)) == NVML_ERROR_GPU_IS_LOST:
                    self._lost.add(i)
        return None

    def available(self) -> bool:
        """NVML loaded and initialised (first call pays nvmlInit, ~12 ms on a real host)."""
        return self._ensure()

    @property
    def unavailable_reason(self) -> str | None:
        """"NVML unavailable: <reason>" when NVML cannot be used, else None."""
        self._ensure()
        return self._reason

    @property
    def init_seconds(self) -> float:
        """What nvmlInit cost (~12 ms on the H200 host)."""
        self._ensure()
        return self._init_seconds

    @property
    def import_seconds(self) -> float:
        """What importing pynvml cost (~90 ms cold on the H200 host; 0 with a module passed in)."""
        self._ensure()
        return self._import_seconds

    @property
    def is_standin(self) -> bool:
        """True when running on the stand-in module, not the real library."""
        self._ensure()
        return self._m is not None and hasattr(self._m, "standin")

    @property
    def module(self) -> ModuleType | None:
        """The pynvml(-shaped) module in use, once loaded."""
        self._ensure()
        return self._m  # type: ignore[no-any-return]

    def device_count(self) -> int:
        """Number of GPUs (0 when unavailable)."""
        return self._count if self._ensure() else 0

    def lost(self) -> frozenset[int]:
        """Indices of GPUs NVML reported as lost."""
        with self._lock:
            return frozenset(self._lost)

    def shutdown(self) -> None:
        """nvmlShutdown if we initialised; a later call initialises again."""
        with self._lock:
            if self._tried and self._reason is None and self._m is not None:
                try:
                    self._m.nvmlShutdown()
                except self._m.NVMLError:
                    pass  # shutting down: nothing to report to anyone
            self._tried = False
            self._reason = None
            self._handles = []
            self._infos = None
            self._lost = set()

    # ---- calls -------------------------------------------------------------------------------
    def _call(self, errors: list[tuple[str, str]] | None, what: str, fn: str, *args: Any, **kw: Any) -> Any:
        """One NVML call; NVML errors -> NA (noted in ``errors``), GPU lost -> _GpuLost."""
        func = getattr(self._m, fn, None)
        stats = self.stats
        if func is None:
            if errors is not None:
                errors.append((what, f"{fn} not in this pynvml"))
            return NA
        t0 = time.perf_counter()
        try:
            return func(*args, **kw)
        except self._m.NVMLError as exc:
            code = int(getattr(exc, "value", -1))
            stats.errors[fn] = code
            if code == NVML_ERROR_GPU_IS_LOST:
                raise _GpuLost from exc
            if errors is not None:
                errors.append((what, str(exc) or f"NVML error {code}"))
            return NA
        except self._answer_errors as exc:  # a malformed answer or a binding/driver mismatch: NA, reason kept
            if errors is not None:
                errors.append((what, f"{type(exc).__name__}: {exc}"))
            return NA
        finally:
            dt = time.perf_counter() - t0
            stats.calls += 1
            stats.seconds += dt
            if dt > stats.slowest_s:
                stats.slowest_s = dt
                stats.slowest = fn

    def _handle(self, index: int) -> Any:
        if not self._ensure() or not 0 <= index < self._count:
            return None
        return self._handles[index]

    def _mark_lost(self, index: int) -> None:
        with self._lock:
            self._lost.add(index)

    @property
    def stats(self) -> CallStats:
        """NVML call statistics of the calling thread since its last ``take_stats``."""
        stats: CallStats | None = getattr(self._tls, "stats", None)
        if stats is None:
            stats = self._tls.stats = CallStats()
        return stats

    def take_stats(self) -> CallStats:
        """The calling thread's call statistics since its last take, reset."""
        stats = self.stats
        self._tls.stats = CallStats()
        return stats

    # ---- static ------------------------------------------------------------------------------
    def driver_version(self) -> str | NAType:
        """The driver version ("580.159.04")."""
        if not self._ensure():
            return NA
        value = self._call(None, "driver", "nvmlSystemGetDriverVersion")
        return NA if isinstance(value, NAType) else _text(value)

    def cuda_driver_version(self) -> str | NAType:
        """The CUDA version the driver supports ("13.0")."""
        if not self._ensure():
            return NA
        value = self._call(None, "cuda", "nvmlSystemGetCudaDriverVersion")
        if isinstance(value, NAType):
            return NA
        return f"{int(value) // 1000}.{int(value) % 1000 // 10}"

    def infos(self) -> tuple[GpuInfo, ...]:
        """Static facts of every GPU, read once (lost GPUs keep what was read before)."""
        if not self._ensure():
            return ()
        if self._infos is None:
            infos = tuple(self._read_info(i) for i in range(self._count))
            with self._lock:
                self._infos = infos
        lost = self.lost()
        return tuple(
            info if info.lost or info.index not in lost else _replace_lost(info) for info in self._infos
        )

    def _lost_info(self, index: int, reason: str) -> GpuInfo:
        return GpuInfo(index, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, lost=True, errors=(("gpu", reason),))

    def _read_info(self, index: int) -> GpuInfo:
        try:
            return self._read_info_unguarded(index)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
            reason = f"unexpected NVML answer: {type(exc).__name__}: {exc}"
            return GpuInfo(index, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, errors=(("gpu", reason),))

    def _read_info_unguarded(self, index: int) -> GpuInfo:
        h = self._handle(index)
        if h is None:
            return self._lost_info(index, "no handle: GPU is lost or inaccessible")
        errs: list[tuple[str, str]] = []
        try:
            name = self._call(errs, "name", "nvmlDeviceGetName", h)
            uuid = self._call(errs, "uuid", "nvmlDeviceGetUUID", h)
            pci = self._call(errs, "pci_bus_id", "nvmlDeviceGetPciInfo", h)
            cap = self._call(errs, "capability", "nvmlDeviceGetCudaComputeCapability", h)
            mem = self._call(errs, "memory_total", "nvmlDeviceGetMemoryInfo", h)
            gen = self._call(errs, "pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", h)
            width = self._call(errs, "pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", h)
            mig = self._call(errs, "mig_mode", "nvmlDeviceGetMigMode", h)
            limit = self._call(errs, "power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", h)
            persist = self._call(errs, "persistence_mode", "nvmlDeviceGetPersistenceMode", h)
        except _GpuLost:
            self._mark_lost(index)
            return self._lost_info(index, "GPU is lost")
        capability: tuple[int, int] | NAType = NA
        fam: str | NAType = NA
        sm: str | NAType = NA
        if not isinstance(cap, NAType):
            capability = (int(cap[0]), int(cap[1]))
            fam = family(*capability)
            sm = sm_name(*capability)
        return GpuInfo(
            index=index,
            name=NA if isinstance(name, NAType) else _text(name),
            uuid=NA if isinstance(uuid, NAType) else _text(uuid),
            pci_bus_id=NA if isinstance(pci, NAType) else _text(pci.busId),
            capability=capability,
            family=fam,
            sm=sm,
            memory_total=NA if isinstance(mem, NAType) else int(mem.total),
            pcie_max_gen=NA if isinstance(gen, NAType) else int(gen),
            pcie_max_width=NA if isinstance(width, NAType) else int(width),
            mig_mode=NA if isinstance(mig, NAType) else ("Enabled" if int(mig[0]) else "Disabled"),
            power_limit_w=NA if isinstance(limit, NAType) else int(limit) / 1000.0,
            persistence_mode=NA if isinstance(persist, NAType) else ("On" if int(persist) else "Off"),
            errors=tuple(errs),
        )

    # ---- dynamic -----------------------------------------------------------------------------
    def sample(self, index: int) -> GpuSample:
        """Read one GPU's dynamic values. A lost GPU answers at once with ``lost=True``."""
        try:
            return self._sample_unguarded(index)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
            reason = f"unexpected NVML answer: {type(exc).__name__}: {exc}"
            return GpuSample(index, time.time(), NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, errors=(("gpu", reason),))

    def _sample_unguarded(self, index: int) -> GpuSample:
        now = time.time()
        h = self._handle(index)
        if h is None or index in self._lost:
            return _lost_sample(index, now)
        errs: list[tuple[str, str]] = []
        try:
            mem = self._call(errs, "memory", "nvmlDeviceGetMemoryInfo", h, version=NVML_MEMORY_V2)
            reserved: int | NAType
            if isinstance(mem, NAType):  # older driver or GPU: v1 counts the reservation as used
                mem = self._call(errs, "memory", "nvmlDeviceGetMemoryInfo", h)
                reserved = NA
            else:
                reserved = int(mem.reserved)
            util = self._call(errs, "utilization", "nvmlDeviceGetUtilizationRates", h)
            temp = self._call(errs, "temperature_c", "nvmlDeviceGetTemperature", h, NVML_TEMPERATURE_GPU)
            power = self._call(errs, "power_w", "nvmlDeviceGetPowerUsage", h)
            gen = self._call(errs, "pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", h)
            width = self._call(errs, "pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", h)
            procs = self._processes(h, errs)
        except _GpuLost:
            self._mark_lost(index)
            return _lost_sample(index, now)
        return GpuSample(
            index=index,
            time=now,
            memory_used=NA if isinstance(mem, NAType) else int(mem.used),
            memory_reserved=reserved,
            memory_free=NA if isinstance(mem, NAType) else int(mem.free),
            memory_total=NA if isinstance(mem, NAType) else int(mem.total),
            utilization_gpu=NA if isinstance(util, NAType) else int(util.gpu),
            utilization_memory=NA if isinstance(util, NAType) else int(util.memory),
            temperature_c=NA if isinstance(temp, NAType) else int(temp),
            power_w=NA if isinstance(power, NAType) else int(power) / 1000.0,
            pcie_gen=NA if isinstance(gen, NAType) else int(gen),
            pcie_width=NA if isinstance(width, NAType) else int(width),
            processes=procs,
            errors=tuple(errs),
        )

    def sample_all(self) -> tuple[GpuSample, ...]:
        """One sample of every GPU, then forget process names of pids that are gone."""
        if not self._ensure():
            return ()
        samples = tuple(self.sample(i) for i in range(self._count))
        live = {p.pid for s in samples if not isinstance(s.processes, NAType) for p in s.processes}
        with self._lock:
            for pid in [p for p in self._proc_cache if p not in live]:
                del self._proc_cache[pid]
        return samples

    def _processes(self, h: Any, errs: list[tuple[str, str]]) -> tuple[GpuProcess, ...] | NAType:
        compute = self._call(errs, "processes", "nvmlDeviceGetComputeRunningProcesses", h)
        if isinstance(compute, NAType):  # the graphics list alone would show "no processes" while CUDA holds memory
            return NA
        graphics = self._call(errs, "processes", "nvmlDeviceGetGraphicsRunningProcesses", h)
        merged: dict[int, tuple[int | NAType, str]] = {}
        for kind, entries in (("C", compute), ("G", graphics)):
            if isinstance(entries, NAType):
                continue
            for entry in entries:
                pid = int(entry.pid)
                used = entry.usedGpuMemory
                mem: int | NAType = NA if used is None else int(used)
                if pid in merged:
                    old_mem, old_kind = merged[pid]
                    merged[pid] = (old_mem if not isinstance(old_mem, NAType) else mem, f"{old_kind}+{kind}")
                else:
                    merged[pid] = (mem, kind)
        return tuple(
            GpuProcess(pid, *self._describe(pid), used_memory=mem, kind=kind)
            for pid, (mem, kind) in sorted(merged.items())
        )

    def _describe(self, pid: int) -> tuple[str | NAType, tuple[str, ...] | NAType]:
        cached = self._proc_cache.get(pid)
        if cached is not None:
            return cached
        if self._lookup is None:
            self._lookup = psutil_lookup()
        name, cmdline = self._lookup(pid)
        if isinstance(name, NAType):
            value = self._call(None, "process_name", "nvmlSystemGetProcessName", pid)
            if not isinstance(value, NAType):
                name = os.path.basename(_text(value)) or NA
        with self._lock:
            self._proc_cache[pid] = (name, cmdline)
        return name, cmdline

    # ---- topology inputs (used once by topology.read_topology) -------------------------------
    def common_ancestor(self, a: int, b: int) -> int | NAType:
        """nvmlDeviceGetTopologyCommonAncestor level (10 PIX .. 50 SYS): the PCIe path only."""
        ha, hb = self._handle(a), self._handle(b)
        if ha is None or hb is None:
            return NA
        try:
            value = self._call(None, "topology", "nvmlDeviceGetTopologyCommonAncestor", ha, hb)
        except _GpuLost:
            return NA
        return NA if isinstance(value, NAType) else int(value)

    def p2p_status(self, a: int, b: int, cap: str) -> int | NAType:
        """nvmlDeviceGetP2PStatus for a capability name in P2P_CAPS (0 = OK)."""
        ha, hb = self._handle(a), self._handle(b)
        if ha is None or hb is None:
            return NA
        try:
            value = self._call(None, "p2p", "nvmlDeviceGetP2PStatus", ha, hb, P2P_CAPS[cap])
        except _GpuLost:
            return NA
        return NA if isinstance(value, NAType) else int(value)

    def nvlinks(self, index: int) -> tuple[NvLink, ...]:
        """Every NVLink the GPU has (none on PCIe-only parts: the first state call is NotSupported)."""
        h = self._handle(index)
        if h is None:
            return ()
        links: list[NvLink] = []
        try:
            for link in range(MAX_NVLINKS):
                state = self._call(None, "nvlink", "nvmlDeviceGetNvLinkState", h, link)
                if isinstance(state, NAType):
                    break
                version = self._call(None, "nvlink", "nvmlDeviceGetNvLinkVersion", h, link)
                rtype = self._call(None, "nvlink", "nvmlDeviceGetNvLinkRemoteDeviceType", h, link)
                rpci = self._call(None, "nvlink", "nvmlDeviceGetNvLinkRemotePciInfo", h, link)
                bus: str | NAType = NA
                if not isinstance(rpci, NAType):
                    text = _text(rpci.busId).upper()
                    bus = NA if text in ("", UNKNOWN_BUS) else text
                kind = {0: "gpu", 1: "npu", 2: "switch"}.get(-1 if isinstance(rtype, NAType) else int(rtype), "unknown")
                links.append(
                    NvLink(
                        link=link,
                        active=bool(state),
                        version=NA if isinstance(version, NAType) else int(version),
                        remote_type=kind,
                        remote_bus_id=bus,
                    )
                )
        except _GpuLost:
            self._mark_lost(index)
        return tuple(links)

    def cpu_affinity(self, index: int) -> tuple[int, ...] | NAType:
        """CPUs near the GPU (from nvmlDeviceGetCpuAffinity's bitmask)."""
        h = self._handle(index)
        if h is None:
            return NA
        words = max(16, -(-(os.cpu_count() or 1) // 64))
        try:
            value = self._call(None, "cpu_affinity", "nvmlDeviceGetCpuAffinity", h, words)
        except _GpuLost:
            return NA
        if isinstance(value, NAType):
            return NA
        return _bits(value)

    def numa_affinity(self, index: int) -> tuple[int, ...] | NAType:
        """NUMA nodes near the GPU (nvmlDeviceGetMemoryAffinity, node scope)."""
        h = self._handle(index)
        if h is None:
            return NA
        try:
            value = self._call(None, "numa_affinity", "nvmlDeviceGetMemoryAffinity", h, 4, NVML_AFFINITY_SCOPE_NODE)
        except _GpuLost:
            return NA
        return NA if isinstance(value, NAType) else _bits(value)

    def numa_node_id(self, index: int) -> int | NAType:
        """The GPU's own NUMA node (coherent-memory systems only; NotSupported elsewhere)."""
        h = self._handle(index)
        if h is None:
            return NA
        try:
            value = self._call(None, "numa_node_id", "nvmlDeviceGetNumaNodeId", h)
        except _GpuLost:
            return NA
        return NA if isinstance(value, NAType) else int(value)


def _bits(words: Sequence[int]) -> tuple[int, ...]:
    return tuple(w * 64 + b for w, word in enumerate(words) for b in range(64) if (int(word) >> b) & 1)


def _lost_sample(index: int, now: float) -> GpuSample:
    return GpuSample(
        index, now, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, lost=True, errors=(("gpu", "GPU is lost"),)
    )


def _replace_lost(info: GpuInfo) -> GpuInfo:
    return replace(info, lost=True)


def nvml_from_env(standin: str | None = None) -> Nvml:
    """The stand-in named by ``standin`` (else $SYMMTUI_NVML_STANDIN, else the real NVML), not yet initialised.

    An unknown scenario name raises KeyError naming the known ones (the verb turns it into a UserError).
    """
    if standin:
        from symmtui.gpu.standin import load_standin  # the stand-in pynvml: only when a scenario is named

        return Nvml(load_standin(standin))
    return Nvml()
