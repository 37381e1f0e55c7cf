"""Wire the NVML layer into the launcher: which pids hold GPU memory, and the GPUs' capability."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symmtui.gpu.nvml import Nvml


def open_nvml() -> Nvml | None:
    """The real NVML (imported only here), or None when this host has none."""
    from symmtui.gpu.nvml import Nvml

    nvml = Nvml()
    return nvml if nvml.available() else None


def gpu_pids_from(nvml: Nvml) -> Callable[[], set[int] | None]:
    """A ``gpu_pids`` callable for :class:`~symmtui.launch.supervisor.Supervisor` over ``nvml``.

    Answers None (not checked) when NVML is unavailable or no GPU can list its processes.
    """
    from symmtui.gpu.nvml import NAType

    def gpu_pids() -> set[int] | None:
        if not nvml.available():
            return None
        pids: set[int] = set()
        listed = False
        for sample in nvml.sample_all():
            if sample.lost or isinstance(sample.processes, NAType):
                continue
            listed = True
            pids.update(p.pid for p in sample.processes)
        return pids if listed else None

    return gpu_pids


def capability_major(nvml: Nvml | None) -> int | None:
    """Highest compute-capability major among the GPUs (12 for SM120), None if unknown."""
    if nvml is None:
        return None
    from symmtui.gpu.nvml import NAType

    majors = [i.capability[0] for i in nvml.infos() if not isinstance(i.capability, NAType)]
    return max(majors) if majors else None
