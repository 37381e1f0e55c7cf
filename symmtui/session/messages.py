"""What a Session posts: plain frozen records (msgspec Structs) that carry their data (no Textual).

Every message a node's engine makes names its node and carries the Session's Board (``judge.board.Board``):
the one value a reader lays out, so a reader never works out the verdict, a cause or a next step itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct

from symmtui.judge.readiness import State

if TYPE_CHECKING:
    from symmtui.bringup.engine import EngineUpdate
    from symmtui.gpu.sampler import GpuSnapshot
    from symmtui.gpu.topology import Topology
    from symmtui.judge.board import Board
    from symmtui.judge.events import Event
    from symmtui.judge.ranks import RankSummary
    from symmtui.judge.readiness import Snapshot
    from symmtui.logs.follow import FileNotice, LogLine
    from symmtui.stacks.report import StacksReport

VERDICTS = (State.READY, State.CRASHED, State.STALLED, State.TIMED_OUT, State.STOPPED)
"""States a verdict is about (STALLED too: it is what a user walking away wants to know)."""


class EngineBatch(Struct, frozen=True):
    """One batch of node ``node``'s engine (its new lines, events and file notices) and the Board now.

    ``restarted``: the first batch of a new launch (a relaunch); the reader starts that node's pane over.
    ``log_path``: the file its lines can be read back from (the log, or a log command's copy; None: none).
    ``launch_id``: the launch the node follows (None: an attach).
    """

    node: str
    update: EngineUpdate
    log_path: str | None
    board: Board
    restarted: bool = False
    launch_id: str | None = None

    @property
    def lines(self) -> tuple[LogLine, ...]:
        return self.update.lines

    @property
    def events(self) -> tuple[Event, ...]:
        return self.update.events

    @property
    def notices(self) -> tuple[FileNotice, ...]:
        return self.update.notices

    @property
    def dropped(self) -> int:
        """Lines dropped (oldest first) before a reader took them: it reads them back from ``log_path``."""
        return self.update.dropped_lines

    @property
    def generation(self) -> int:
        return self.update.generation

    @property
    def snapshot(self) -> Snapshot:
        """The node's state as the verdict judges it."""
        return self.board.view(self.node).snapshot

    @property
    def ranks(self) -> RankSummary | None:
        return self.board.view(self.node).ranks


class GpuRound(Struct, frozen=True):
    """One GPU sampling round with the facts read from it: our launch's pids and the GPUs' capability."""

    snapshot: GpuSnapshot
    our_pids: frozenset[int]
    capability: tuple[int, int] | None


class TopologyRead(Struct, frozen=True):
    """The topology, read once (None and a reason when it could not be read)."""

    topology: Topology | None
    reason: str | None


class Notice(Struct, frozen=True):
    """A one-line note for the user: ``severity`` is information, warning or error."""

    text: str
    severity: str = "information"


class Bell(Struct, frozen=True):
    """Ring the terminal (a notification, rung through the front end's own screen)."""


class PatchState(Struct, frozen=True):
    """What an apply/revert through the session left: the patch is ``applied`` or not, and its message."""

    applied: bool
    text: str


class StacksTaken(Struct, frozen=True):
    """A stacks dump of node ``node``'s server processes (``symmtui.stacks``), or the one line why there is none.

    ``auto``: taken because the verdict became STALLED naming that node (once per stall), not on a key.
    ``saved``: where it was written next to the log (None: not saved, or no log).
    """

    report: StacksReport | None
    error: str | None
    auto: bool
    saved: str | None = None
    node: str = ""


class VerdictReached(Struct, frozen=True):
    """The Session's verdict entered ``board.state`` (READY, CRASHED, STALLED, TIMED OUT, STOPPED) or
    named another node: posted once per change, after the history is written, for the observers (notify,
    metrics). ``generation``, ``launch_id`` and ``log_path`` are those of the node it is about."""

    board: Board
    generation: int
    launch_id: str | None
    log_path: str | None

    @property
    def snapshot(self) -> Snapshot:
        return self.board.snapshot


SessionMessage = EngineBatch | GpuRound | TopologyRead | Notice | Bell | StacksTaken | VerdictReached
