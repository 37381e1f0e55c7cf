"""What a GPU source (NVML or an exporter) answers with: NA for a value NVML could not give, frozen GPU info/sample/process/link records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, TypeVar

from msgspec import Struct, field

T = TypeVar("T")
MIB: Final = 1024 * 1024


class NAType:
    """The value of a field NVML could not give (not supported, no permission, GPU lost): shown as "n/a"."""

    _instance: NAType | None = None
    __slots__ = ()

    def __new__(cls) -> NAType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NA"

    def __str__(self) -> str:
        return "n/a"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> tuple[type[NAType], tuple[()]]:
        return (NAType, ())


NA: Final = NAType()


def is_na(value: object) -> bool:
    """True for the NA sentinel."""
    return value is NA


def na_or(value: T | NAType, default: T) -> T:
    """``value`` unless it is NA."""
    return default if isinstance(value, NAType) else value


class GpuProcess(Struct, frozen=True):
    """A process holding memory on a GPU (pid from NVML; name and command line from psutil)."""

    pid: int
    name: str | NAType
    cmdline: tuple[str, ...] | NAType
    used_memory: int | NAType  # bytes
    kind: str = "C"  # "C" compute, "G" graphics, "C+G" both


class GpuInfo(Struct, frozen=True):
    """What does not change while a GPU is up."""

    index: int
    name: str | NAType
    uuid: str | NAType
    pci_bus_id: str | NAType
    capability: tuple[int, int] | NAType
    family: str | NAType
    sm: str | NAType
    memory_total: int | NAType  # bytes, as nvidia-smi's "Total"
    pcie_max_gen: int | NAType
    pcie_max_width: int | NAType
    mig_mode: str | NAType  # "Enabled" / "Disabled"
    power_limit_w: float | NAType
    persistence_mode: str | NAType
    lost: bool = False
    errors: tuple[tuple[str, str], ...] = ()  # (field, NVML's reason) for each NA
    host: str | None = None  # the node an exporter reported it from (None: this machine, through NVML)
    host_index: int | None = None  # the GPU's number on that node (``index`` numbers all GPUs shown)


class GpuSample(Struct, frozen=True):
    """One reading of the dynamic values of one GPU."""

    index: int
    time: float  # time.time()
    memory_used: int | NAType  # bytes, nvidia-smi's "Used" (v2: reservation not counted)
    memory_reserved: int | NAType  # bytes, driver/firmware reservation
    memory_free: int | NAType
    memory_total: int | NAType
    utilization_gpu: int | NAType  # percent
    utilization_memory: int | NAType
    temperature_c: int | NAType
    power_w: float | NAType
    pcie_gen: int | NAType
    pcie_width: int | NAType
    processes: tuple[GpuProcess, ...] | NAType
    lost: bool = False
    errors: tuple[tuple[str, str], ...] = ()
    last_xid: int | NAType = NA  # the last Xid error an exporter saw (dcgm-exporter); 0 = none; NVML: NA

    @property
    def memory_fraction(self) -> float | NAType:
        """Used over usable (total minus reserved), 0..1."""
        if isinstance(self.memory_used, NAType) or isinstance(self.memory_total, NAType):
            return NA
        usable = self.memory_total - na_or(self.memory_reserved, 0)
        return self.memory_used / usable if usable > 0 else NA


class NvLink(Struct, frozen=True):
    """One NVLink of one GPU."""

    link: int
    active: bool
    version: int | NAType
    remote_type: str  # "gpu", "switch", "npu", "unknown"
    remote_bus_id: str | NAType  # NA when hidden (VMs answer FFFFFFFF:FF:FF.0)


class CallStats(Struct):
    """Cost of NVML calls over a span: count, total and the slowest call."""

    calls: int = 0
    seconds: float = 0.0
    slowest: str = ""
    slowest_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)


def to_mib(value: int | NAType) -> int | NAType:
    """Bytes as the MiB nvidia-smi prints, which rounds up (615.06 MiB reserved shows as 616)."""
    if isinstance(value, NAType):
        return NA
    return -(-value // MIB)


def format_id_list(ids: Iterable[int]) -> str:
    """CPU or node ids as nvidia-smi prints them: "0-31", "0-31,64-95", "6,14,22"; empty -> ""."""
    ordered = sorted(set(ids))
    if not ordered:
        return ""
    parts: list[str] = []
    start = prev = ordered[0]
    for cpu in ordered[1:] + [-2]:
        if cpu == prev + 1:
            prev = cpu
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(parts)
