"""Where GPU readings come from: local NVML or an exporter's URL, behind one small interface the sampler reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from msgspec import Struct

from symmtui.gpu.results import CallStats, GpuInfo, GpuSample

if TYPE_CHECKING:
    from symmtui.gpu.nvml import Nvml

NVML = "nvml"
"""The source spec of this machine's GPUs through NVML (a profile's ``gpus = "nvml"``)."""

class Reading(Struct, frozen=True):
    """One round of one source: what it knows of its GPUs now.

    ``unavailable_reason``: why there is nothing (NVML missing, exporter unreachable); the GPUs are then
    empty or, for a source that answered before, its last GPUs marked lost.
    """

    infos: tuple[GpuInfo, ...]
    samples: tuple[GpuSample, ...]
    unavailable_reason: str | None = None
    stats: CallStats | None = None


@runtime_checkable
class GpuSource(Protocol):
    """What the sampler reads GPUs from. ``read`` never raises for a fault of the source (it says it in
    ``Reading.unavailable_reason``); it runs on the sampler's thread and may block up to its timeout."""

    @property
    def label(self) -> str:
        """How the user names it: "nvml" or the URL."""
        ...

    def read(self) -> Reading:
        """One round: every GPU's static facts and a fresh sample."""
        ...

    def close(self) -> None:
        """Release connections (idempotent)."""
        ...


class NvmlSource:
    """Local NVML as a source (the sampler's round, unchanged: infos, samples, infos again if one was lost)."""

    def __init__(self, nvml: Nvml) -> None:
        self.nvml = nvml

    @property
    def label(self) -> str:
        return NVML

    def read(self) -> Reading:
        nvml = self.nvml
        reason = nvml.unavailable_reason
        nvml.take_stats()
        infos = nvml.infos() if reason is None else ()
        samples = nvml.sample_all() if reason is None else ()
        infos = nvml.infos() if reason is None and any(s.lost for s in samples) else infos
        return Reading(infos, samples, reason, nvml.take_stats())

    def close(self) -> None:
        """NVML stays initialised: its owner shuts it down."""


def as_source(source: Nvml | GpuSource) -> GpuSource:
    """A GpuSource for either an ``Nvml`` or a source already."""
    from symmtui.gpu.nvml import Nvml  # NVML (~7 ms): a profile's [gpus] check imports this module, not NVML

    return NvmlSource(source) if isinstance(source, Nvml) else source
