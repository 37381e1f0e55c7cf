"""What a Session posts to its front end: plain frozen dataclasses that carry their data (no Textual)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symmtui.core.events import Event
    from symmtui.core.follow import FileNotice, LogLine
    from symmtui.core.readiness import Snapshot
    from symmtui.gpu.sampler import GpuSnapshot
    from symmtui.gpu.topology import Topology


@dataclass(frozen=True)
class EngineBatch:
    """One batch from the engine: new lines, new/updated events, file notices, and the state now.

    ``restarted``: the first batch of a new launch (a relaunch); the reader starts its pane over.
    ``dropped``: lines the engine's one buffer dropped (oldest first) while the reader was slow.
    """

    lines: tuple[LogLine, ...]
    events: tuple[Event, ...]
    notices: tuple[FileNotice, ...]
    snapshot: Snapshot
    dropped: int
    generation: int
    log_path: str | None
    restarted: bool = False


@dataclass(frozen=True)
class GpuSample:
    """One sampling round with the facts read from it: our launch's pids and the GPUs' capability."""

    snapshot: GpuSnapshot
    our_pids: frozenset[int]
    capability: tuple[int, int] | None


@dataclass(frozen=True)
class TopologyRead:
    """The topology, read once (None and a reason when it could not be read)."""

    topology: Topology | None
    reason: str | None


@dataclass(frozen=True)
class Notice:
    """A one-line note for the user: ``severity`` is information, warning or error."""

    text: str
    severity: str = "information"


@dataclass(frozen=True)
class PatchState:
    """What an apply/revert through the session left: the patch is ``applied`` or not, and its message."""

    applied: bool
    text: str


SessionMessage = EngineBatch | GpuSample | TopologyRead | Notice
