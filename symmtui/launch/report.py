"""Small frozen dataclasses the supervisor reports with: stop/relaunch progress, strangers, results."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING

from msgspec import Struct, field

if TYPE_CHECKING:  # types only: a watch-only session reads Step and Progress without psutil
    from symmtui.launch.state import LaunchRecord
    from symmtui.patch.preflight import Prediction
    from symmtui.proc.proctree import ProcInfo


class Step(StrEnum):
    """Where a stop is (in this order); a relaunch is PREFLIGHT, then the stop's steps, then LAUNCH."""

    SCAN = "scan"  # finding every process of the launch
    TERM = "term"  # SIGTERM sent, waiting out the grace period
    KILL = "kill"  # SIGKILL sent to what was left
    GPU = "gpu"  # waiting for the GPU memory those processes held to be released
    PORT = "port"  # waiting for the server port to be free
    PREFLIGHT = "preflight"  # relaunch: the patch check, before anything is stopped
    LAUNCH = "launch"  # relaunch: new process started
    DONE = "done"


class Stranger(Struct, frozen=True):
    """A process we did not start that still holds the port or GPU memory (pid None: not visible to us)."""

    pid: int | None
    create_time: float | None
    cmdline: str
    holds: tuple[str, ...]
    """What it holds: "port 30000", "GPU memory"."""

    def describe(self) -> str:
        who = f"pid {self.pid}" if self.pid is not None else "a process of another user"
        cmd = f" ({self.cmdline})" if self.cmdline else ""
        return f"{who}{cmd} holds {' and '.join(self.holds)}"


class Progress(Struct, frozen=True):
    """One visible step of a stop or relaunch, pushed to ``on_progress`` (from the calling thread)."""

    step: Step
    message: str
    """One line for a status bar, e.g. "SIGTERM sent to 9 processes; waiting 27 s"."""
    remaining: tuple[int, ...] = ()
    """Pids of ours still alive (SCAN/TERM/KILL) or still holding GPU memory (GPU)."""
    elapsed: float = 0.0
    """Seconds since the stop began."""
    time_left: float | None = None
    """Seconds until this step gives up / escalates (None when not waiting)."""
    strangers: tuple[Stranger, ...] = ()
    node: str = ""
    """The node of a server of several nodes whose step this is (its name leads ``message`` then)."""


OnProgress = Callable[[Progress], None]
"""Called with each step of a stop / relaunch (from the thread that runs it)."""
GpuPids = Callable[[], "set[int] | None"]
"""Which pids hold GPU memory now (symmtui.gpu.facts.gpu_pids_from); None when that could not be checked."""


StopProgress = Progress


class StopReport(Struct, frozen=True):
    """What a stop did and what is left."""

    record: LaunchRecord | None
    found: tuple[ProcInfo, ...] = ()
    """Every process of the launch, known before the first signal."""
    terminated: tuple[int, ...] = ()
    """Pids that exited after SIGTERM (or had already exited)."""
    killed: tuple[int, ...] = ()
    """Pids that needed SIGKILL."""
    survivors: tuple[ProcInfo, ...] = ()
    """Ours, still alive after SIGKILL (uninterruptible sleep): the stop failed."""
    gpu_free: bool | None = None
    """Our pids gone from the GPU process list (None: not checked, no NVML)."""
    port_free: bool | None = None
    """The profile URL's port is free (None: no URL)."""
    strangers: tuple[Stranger, ...] = ()
    elapsed: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def clean(self) -> bool:
        """True when nothing of ours is left and the GPU memory and port are free."""
        return not self.survivors and self.gpu_free is not False and self.port_free is not False

    def summary(self) -> str:
        """One line for the user."""
        if self.record is None and not self.found:
            head = "nothing launched by symmtui is running"
        else:
            head = f"stopped {len(self.found)} process(es)"
            if self.killed:
                head += f" ({len(self.killed)} needed SIGKILL)"
        parts = [head]
        if self.survivors:
            parts.append(
                "still alive after SIGKILL: " + ", ".join(f"pid {p.pid}" for p in self.survivors)
            )
        if self.gpu_free is False:
            parts.append("GPU memory not released yet")
        if self.port_free is False:
            parts.append("port still held")
        for s in self.strangers:
            parts.append(s.describe())
        return "; ".join(parts)


class RelaunchResult(Struct, frozen=True):
    """A relaunch: the stop, the preflight prediction (if any) and the new launch."""

    stop: StopReport
    record: LaunchRecord
    prediction: Prediction | None = None
    """What ``symmtui.patch.preflight`` predicted (None: no crash predicted, or not checked)."""
    warnings: tuple[str, ...] = ()
