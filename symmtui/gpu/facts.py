"""The one place that answers GPU facts: pids holding GPU memory, compute capability, NVLink for multicast.

Every front end (dashboard, `launch`, `stop`, `patch`, the demo) asks these functions, so one host
gives one answer everywhere. Conventions:

- "Could not check" is ``None`` with a reason beside it, never an empty answer: an empty set of
  pids means "checked, nobody holds GPU memory".
- Capability on a mixed host (GPUs of different compute capabilities): :class:`Capabilities` keeps
  the set of distinct capabilities and names the one the SM120 patch targets, the **highest**.
  Each rank reads SGLang's / vLLM's symmetric-memory tables with its own GPU's capability, so a
  launch needs a key for every distinct capability of 9 or more the host has (below 9 the tables
  are never read). The patch adds one key, the highest; :attr:`Capabilities.also_needed` lists the
  other capabilities that read the tables, which the patch check verifies are already there (the
  shipped tables carry 9.x and 10.x) and names as a caveat when one is missing.
- NVLink for symmetric memory: multimem/multicast needs NVLink between **every** pair of GPUs (all
  ranks join one multicast group), so "NVLink" here means every pair; one GPU or an unreadable
  topology is ``None`` (cannot tell), never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from msgspec import Struct

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.results import GpuInfo, GpuSample, NAType
from symmtui.gpu.topology import Topology, read_topology

SYMM_MEM_MIN_MAJOR = 9  # below this, SGLang / vLLM leave torch symmetric memory off: the tables are not read


class Holders(Struct, frozen=True):
    """Which pids hold GPU memory: ``pids`` None when it could not be checked (``reason`` says why)."""

    pids: frozenset[int] | None
    reason: str = ""

    @property
    def checked(self) -> bool:
        return self.pids is not None


def open_nvml() -> Nvml | None:
    """The real NVML (or the stand-in $SYMMTUI_NVML_STANDIN names), or None when this host has none."""
    nvml = Nvml()
    return nvml if nvml.available() else None


def holders_in(samples: Iterable[GpuSample]) -> Holders:
    """The pids listed by samples already taken (the sampler's): GPUs that are lost or cannot list are skipped.

    Checked when at least one GPU listed its processes; None when none could.
    """
    pids: set[int] = set()
    listed = 0
    seen = 0
    for sample in samples:
        seen += 1
        if sample.lost or isinstance(sample.processes, NAType):
            continue
        listed += 1
        pids.update(p.pid for p in sample.processes)
    if listed:
        return Holders(frozenset(pids))
    return Holders(None, "no GPUs" if not seen else "no GPU could list its processes")


def memory_holders(nvml: Nvml) -> Holders:
    """Which pids hold GPU memory right now (one NVML sample of every GPU)."""
    if not nvml.available():
        return Holders(None, nvml.unavailable_reason or "NVML unavailable")
    return holders_in(nvml.sample_all())


def gpu_pids_from(nvml: Nvml) -> Callable[[], set[int] | None]:
    """A ``gpu_pids`` callable for :class:`~symmtui.launch.supervisor.Supervisor`: None = not checked."""

    def gpu_pids() -> set[int] | None:
        pids = memory_holders(nvml).pids
        return None if pids is None else set(pids)

    return gpu_pids


class Capabilities(Struct, frozen=True):
    """The compute capability of each GPU (None where NVML could not tell) and the rule for mixed hosts."""

    per_gpu: tuple[tuple[int, int] | None, ...]
    reason: str = ""  # why none is known (NVML unavailable, no GPU reported one)

    @property
    def distinct(self) -> tuple[tuple[int, int], ...]:
        """The distinct known capabilities, lowest first."""
        return tuple(sorted({c for c in self.per_gpu if c is not None}))

    @property
    def mixed(self) -> bool:
        """True when the GPUs report more than one capability."""
        return len(self.distinct) > 1

    @property
    def for_patch(self) -> tuple[int, int] | None:
        """The capability the patch targets: the highest the host has (None when none is known)."""
        known = self.distinct
        return known[-1] if known else None

    @property
    def major(self) -> int | None:
        """The major of :attr:`for_patch` (12 for SM120), for what is keyed by major alone."""
        cap = self.for_patch
        return None if cap is None else cap[0]

    @property
    def also_needed(self) -> tuple[tuple[int, int], ...]:
        """The other capabilities on this host that read the symmetric-memory tables (major >= 9)."""
        top = self.for_patch
        return tuple(c for c in self.distinct if c != top and c[0] >= SYMM_MEM_MIN_MAJOR)


def capabilities_of(infos: Iterable[GpuInfo], reason: str = "") -> Capabilities:
    """The capabilities of GPUs already read (``nvml.infos()`` or a sample snapshot's infos)."""
    per_gpu = tuple(None if isinstance(i.capability, NAType) else i.capability for i in infos)
    if not any(c is not None for c in per_gpu) and not reason:
        reason = "no GPUs" if not per_gpu else "no GPU reported its compute capability"
    return Capabilities(per_gpu, reason)


def capabilities(nvml: Nvml | None) -> Capabilities:
    """The host's capabilities from NVML (``reason`` set when none is known)."""
    if nvml is None:
        return Capabilities((), "NVML unavailable")
    if not nvml.available():
        return Capabilities((), nvml.unavailable_reason or "NVML unavailable")
    return capabilities_of(nvml.infos())


def nvlink_every_pair(topology: Topology | None) -> bool | None:
    """NVLink between every pair of GPUs (what multimem/multicast needs); None: fewer than 2 GPUs or unread."""
    if topology is None or len(topology.gpus) < 2:
        return None
    return topology.nvlink_all_pairs


def read_nvlink_every_pair(nvml: Nvml | None) -> bool | None:
    """:func:`nvlink_every_pair` read from NVML now (about 9 ms per pair on a real host)."""
    if nvml is None or not nvml.available() or nvml.device_count() < 2:
        return None
    return nvlink_every_pair(read_topology(nvml))


class PatchFacts(Struct, frozen=True):
    """What the patch check needs to know about this host: capabilities and NVLink between every pair."""

    capabilities: Capabilities
    nvlink: bool | None

    @classmethod
    def given(cls, capability: tuple[int, int] | None, nvlink: bool | None = None) -> PatchFacts:
        """Facts stated rather than read (a ``--capability`` the user passed, a test's host)."""
        per_gpu = () if capability is None else (capability,)
        return cls(Capabilities(per_gpu, "" if capability else "not given"), nvlink)

    @property
    def capability(self) -> tuple[int, int] | None:
        """The capability the patch targets (see :attr:`Capabilities.for_patch`)."""
        return self.capabilities.for_patch

    @property
    def reason(self) -> str:
        return self.capabilities.reason


def patch_facts(nvml: Nvml | None, topology: Topology | None = None) -> PatchFacts:
    """The patch's host facts from NVML; ``topology`` when already read (the dashboard's), else read here."""
    caps = capabilities(nvml)
    nvlink = nvlink_every_pair(topology) if topology is not None else read_nvlink_every_pair(nvml)
    return PatchFacts(caps, nvlink)
