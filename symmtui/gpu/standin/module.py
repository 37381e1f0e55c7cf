"""The stand-in pynvml module: pynvml's function names and signatures over a :class:`StandinHost`."""

from __future__ import annotations

import types
from typing import Any

from symmtui.gpu.standin import errors
from symmtui.gpu.standin.codec import Struct
from symmtui.gpu.standin.errors import (
    NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_NOT_FOUND,
    NVMLError,
)
from symmtui.gpu.standin.host import StandinHost

CONSTANTS: dict[str, Any] = {
    "NVML_FEATURE_DISABLED": 0,
    "NVML_FEATURE_ENABLED": 1,
    "NVML_TEMPERATURE_GPU": 0,
    "NVML_NVLINK_MAX_LINKS": 36,
    "NVML_NVLINK_DEVICE_TYPE_GPU": 0x00,
    "NVML_NVLINK_DEVICE_TYPE_IBMNPU": 0x01,
    "NVML_NVLINK_DEVICE_TYPE_SWITCH": 0x02,
    "NVML_NVLINK_DEVICE_TYPE_UNKNOWN": 0xFF,
    "NVML_TOPOLOGY_INTERNAL": 0,
    "NVML_TOPOLOGY_SINGLE": 10,
    "NVML_TOPOLOGY_MULTIPLE": 20,
    "NVML_TOPOLOGY_HOSTBRIDGE": 30,
    "NVML_TOPOLOGY_NODE": 40,
    "NVML_TOPOLOGY_CPU": 40,
    "NVML_TOPOLOGY_SYSTEM": 50,
    "NVML_P2P_CAPS_INDEX_READ": 0,  # real pynvml 13 has a stray comma here, making it (0,); we keep the int
    "NVML_P2P_CAPS_INDEX_WRITE": 1,
    "NVML_P2P_CAPS_INDEX_NVLINK": 2,
    "NVML_P2P_CAPS_INDEX_ATOMICS": 3,
    "NVML_P2P_CAPS_INDEX_PCI": 4,
    "NVML_P2P_CAPS_INDEX_PROP": 4,
    "NVML_P2P_CAPS_INDEX_UNKNOWN": 5,
    "NVML_P2P_STATUS_OK": 0,
    "NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED": 1,
    "NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED": 1,
    "NVML_P2P_STATUS_GPU_NOT_SUPPORTED": 2,
    "NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED": 3,
    "NVML_P2P_STATUS_DISABLED_BY_REGKEY": 4,
    "NVML_P2P_STATUS_NOT_SUPPORTED": 5,
    "NVML_P2P_STATUS_UNKNOWN": 6,
    "NVML_AFFINITY_SCOPE_NODE": 0,
    "NVML_AFFINITY_SCOPE_SOCKET": 1,
    "NVML_DEVICE_MIG_DISABLE": 0,
    "NVML_DEVICE_MIG_ENABLE": 1,
    "nvmlMemory_v2": 0x02000028,
}


class Handle:
    """A device handle (real pynvml hands out ctypes pointers; only identity matters)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<standin nvmlDevice {self.index}>"


class Api:
    """Every pynvml function symmtui uses, with the real parameter names (checked by a test)."""

    def __init__(self, host: StandinHost) -> None:
        self._h = host
        self._handles = [Handle(i) for i in range(host.count)]

    # ---- library ---------------------------------------------------------------------------
    def nvmlInitWithFlags(self, flags: int) -> None:  # noqa: N802
        h = self._h
        h.enter("nvmlInit", needs_init=False)
        if h.init_error is not None:
            raise NVMLError(h.init_error)
        with h.lock:
            h.init_count += 1

    def nvmlInit(self) -> None:  # noqa: N802
        self.nvmlInitWithFlags(0)

    def nvmlShutdown(self) -> None:  # noqa: N802
        self._h.enter("nvmlShutdown")
        with self._h.lock:
            self._h.init_count -= 1

    def nvmlErrorString(self, result: int) -> str:  # noqa: N802
        return str(NVMLError(result))

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        self._h.enter("nvmlSystemGetDriverVersion")
        return str(self._h.answer(self._h.system, "nvmlSystemGetDriverVersion"))

    def nvmlSystemGetCudaDriverVersion(self) -> int:  # noqa: N802
        self._h.enter("nvmlSystemGetCudaDriverVersion")
        return int(self._h.answer(self._h.system, "nvmlSystemGetCudaDriverVersion"))

    def nvmlSystemGetNVMLVersion(self) -> str:  # noqa: N802
        self._h.enter("nvmlSystemGetNVMLVersion")
        return str(self._h.answer(self._h.system, "nvmlSystemGetNVMLVersion"))

    def nvmlSystemGetProcessName(self, pid: int) -> str:  # noqa: N802
        self._h.enter("nvmlSystemGetProcessName")
        return self._h.process_name(pid)

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        self._h.enter("nvmlDeviceGetCount")
        return self._h.count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Handle:  # noqa: N802
        self._h.enter("nvmlDeviceGetHandleByIndex", index if 0 <= index < self._h.count else None)
        if not 0 <= index < self._h.count:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self._handles[index]

    # ---- static device facts ---------------------------------------------------------------
    def _get(self, fn: str, handle: Handle, arg: object | None = None, missing: int = 3) -> Any:
        self._h.enter(fn, handle.index)
        key = fn if arg is None else f"{fn}:{arg}"
        return self._h.device(handle.index, key, missing)

    def nvmlDeviceGetName(self, handle: Handle) -> str:  # noqa: N802
        return str(self._get("nvmlDeviceGetName", handle))

    def nvmlDeviceGetUUID(self, handle: Handle) -> str:  # noqa: N802
        return str(self._get("nvmlDeviceGetUUID", handle))

    def nvmlDeviceGetPciInfo(self, handle: Handle) -> Struct:  # noqa: N802
        return self._get("nvmlDeviceGetPciInfo", handle)  # type: ignore[no-any-return]

    def nvmlDeviceGetIndex(self, handle: Handle) -> int:  # noqa: N802
        self._h.enter("nvmlDeviceGetIndex", handle.index)
        return handle.index

    def nvmlDeviceGetMinorNumber(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetMinorNumber", handle))

    def nvmlDeviceGetCudaComputeCapability(self, handle: Handle) -> tuple[int, int]:  # noqa: N802
        major, minor = self._get("nvmlDeviceGetCudaComputeCapability", handle)
        return int(major), int(minor)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetMaxPcieLinkGeneration", handle))

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetMaxPcieLinkWidth", handle))

    def nvmlDeviceGetMigMode(self, device: Handle) -> list[int]:  # noqa: N802
        return list(self._get("nvmlDeviceGetMigMode", device))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetEnforcedPowerLimit", handle))

    def nvmlDeviceGetPowerManagementLimit(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetPowerManagementLimit", handle))

    def nvmlDeviceGetPersistenceMode(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetPersistenceMode", handle))

    def nvmlDeviceGetNumaNodeId(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetNumaNodeId", handle))

    def nvmlDeviceGetCpuAffinity(self, handle: Handle, cpuSetSize: int) -> list[int]:  # noqa: N802, N803
        words = [int(w) for w in self._get("nvmlDeviceGetCpuAffinity", handle)]
        return (words + [0] * cpuSetSize)[:cpuSetSize]

    def nvmlDeviceGetCpuAffinityWithinScope(self, handle: Handle, cpuSetSize: int, scope: int) -> list[int]:  # noqa: N802, N803
        words = [int(w) for w in self._get("nvmlDeviceGetCpuAffinityWithinScope", handle, scope)]
        return (words + [0] * cpuSetSize)[:cpuSetSize]

    def nvmlDeviceGetMemoryAffinity(self, handle: Handle, nodeSetSize: int, scope: int) -> list[int]:  # noqa: N802, N803
        words = [int(w) for w in self._get("nvmlDeviceGetMemoryAffinity", handle, scope)]
        return (words + [0] * nodeSetSize)[:nodeSetSize]

    # ---- NVLink ----------------------------------------------------------------------------
    def nvmlDeviceGetNvLinkState(self, device: Handle, link: int) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetNvLinkState", device, link, NVML_ERROR_INVALID_ARGUMENT))

    def nvmlDeviceGetNvLinkVersion(self, device: Handle, link: int) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetNvLinkVersion", device, link, NVML_ERROR_INVALID_ARGUMENT))

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: Handle, link: int) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link, NVML_ERROR_INVALID_ARGUMENT))

    def nvmlDeviceGetNvLinkRemotePciInfo(self, device: Handle, link: int) -> Struct:  # noqa: N802
        return self._get("nvmlDeviceGetNvLinkRemotePciInfo", device, link, NVML_ERROR_INVALID_ARGUMENT)  # type: ignore[no-any-return]

    # ---- pairs -----------------------------------------------------------------------------
    def nvmlDeviceGetTopologyCommonAncestor(self, device1: Handle, device2: Handle) -> int:  # noqa: N802
        self._h.enter("nvmlDeviceGetTopologyCommonAncestor", device1.index)
        self._h.enter("nvmlDeviceGetTopologyCommonAncestor:peer", device2.index)
        return int(self._h.pair(device1.index, device2.index, "nvmlDeviceGetTopologyCommonAncestor"))

    def nvmlDeviceGetP2PStatus(self, device1: Handle, device2: Handle, p2pIndex: int) -> int:  # noqa: N802, N803
        self._h.enter("nvmlDeviceGetP2PStatus", device1.index)
        self._h.enter("nvmlDeviceGetP2PStatus:peer", device2.index)
        return int(self._h.pair(device1.index, device2.index, f"nvmlDeviceGetP2PStatus:{p2pIndex}"))

    # ---- dynamic ---------------------------------------------------------------------------
    def nvmlDeviceGetMemoryInfo(self, handle: Handle, version: int | None = None) -> Struct:  # noqa: N802
        fn = "nvmlDeviceGetMemoryInfo_v2" if version else "nvmlDeviceGetMemoryInfo"
        self._h.enter(fn, handle.index)
        return self._h.memory(handle.index, bool(version))

    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> Struct:  # noqa: N802
        self._h.enter("nvmlDeviceGetUtilizationRates", handle.index)
        if not self._h.dynamic:
            return self._h.device(handle.index, "nvmlDeviceGetUtilizationRates")  # type: ignore[no-any-return]
        util = int(round(self._h.util(handle.index)))
        return Struct(gpu=util, memory=util // 2)

    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int:  # noqa: N802
        self._h.enter("nvmlDeviceGetTemperature", handle.index)
        if not self._h.dynamic:
            return int(self._h.device(handle.index, f"nvmlDeviceGetTemperature:{sensor}"))
        return self._h.temperature(handle.index)

    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int:  # noqa: N802
        self._h.enter("nvmlDeviceGetPowerUsage", handle.index)
        if not self._h.dynamic:
            return int(self._h.device(handle.index, "nvmlDeviceGetPowerUsage"))
        return self._h.power_mw(handle.index)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Handle) -> int:  # noqa: N802
        self._h.enter("nvmlDeviceGetCurrPcieLinkGeneration", handle.index)
        if not self._h.dynamic:
            return int(self._h.device(handle.index, "nvmlDeviceGetCurrPcieLinkGeneration"))
        return self._h.pcie_gen(handle.index)

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Handle) -> int:  # noqa: N802
        return int(self._get("nvmlDeviceGetCurrPcieLinkWidth", handle))

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Handle) -> list[Struct]:  # noqa: N802
        self._h.enter("nvmlDeviceGetComputeRunningProcesses", handle.index)
        return self._h.processes(handle.index, "C")

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Handle) -> list[Struct]:  # noqa: N802
        self._h.enter("nvmlDeviceGetGraphicsRunningProcesses", handle.index)
        return self._h.processes(handle.index, "G")


FUNCTIONS: tuple[str, ...] = tuple(name for name in vars(Api) if name.startswith("nvml"))


def build_module(host: StandinHost) -> types.ModuleType:
    """A fresh module object that looks like ``pynvml`` to our wrapper, bound to ``host``."""
    mod = types.ModuleType("pynvml", "symmtui's stand-in for pynvml (nvidia-ml-py), driven by a scenario")
    for name, value in errors.ERROR_CODES.items():
        setattr(mod, name, value)
    for name, cls in errors.ERROR_CLASSES.items():
        setattr(mod, name, cls)
    mod.NVMLError = NVMLError  # type: ignore[attr-defined]
    mod.NVMLLibraryMismatchError = errors.NVMLLibraryMismatchError  # type: ignore[attr-defined]
    mod.nvmlExceptionClass = errors.nvmlExceptionClass  # type: ignore[attr-defined]
    for name, value in CONSTANTS.items():
        setattr(mod, name, value)
    api = Api(host)
    for name in FUNCTIONS:
        setattr(mod, name, getattr(api, name))
    mod.standin = host  # type: ignore[attr-defined]
    mod.STANDIN_SCENARIO = host.name  # type: ignore[attr-defined]
    return mod


__all__ = ["FUNCTIONS", "NVML_ERROR_NOT_FOUND", "build_module"]
