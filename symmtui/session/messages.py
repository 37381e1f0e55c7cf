"""What a Session posts to its front end: plain frozen dataclasses that carry their data (no Textual)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symmtui.core.events import Event
    from symmtui.core.follow import FileNotice, LogLine
    from symmtui.core.ranks import RankSummary
    from symmtui.core.readiness import Snapshot
    from symmtui.gpu.sampler import GpuSnapshot
    from symmtui.gpu.topology import Topology
    from symmtui.stacks.report import StacksReport


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
    ranks: RankSummary | None = None
    """Who is behind, where the log's lines name their rank (core.ranks)."""


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


@dataclass(frozen=True)
class StacksTaken:
    """A stacks dump of the server's processes (``symmtui.stacks``), or the one line why there is none.

    ``auto``: taken because the state became STALLED (once per stall), not on the user's key.
    ``saved``: where it was written next to the log (None: not saved, or no log).
    ``node``: the node of a multi-node server whose processes these are (None: one server).
    """

    report: StacksReport | None
    error: str | None
    auto: bool
    saved: str | None = None
    node: str | None = None


@dataclass(frozen=True)
class VerdictReached:
    """The bring-up of engine ``generation`` entered ``snapshot.state`` (READY, CRASHED, STALLED, TIMED OUT,
    STOPPED): posted once per state change, after the history is written, for observers (notify, record,
    metrics). ``launch_id``: the launch it judged (None for an attach)."""

    snapshot: Snapshot
    generation: int
    launch_id: str | None
    log_path: str | None


SessionMessage = EngineBatch | GpuSample | TopologyRead | Notice | StacksTaken | VerdictReached
