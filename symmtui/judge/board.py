"""The Board: everything a reader shows of a bring-up, built once per engine batch and timed wake-up.

The Session builds one frozen :class:`Board` on the engine thread each time a node's engine reports (a batch
of lines, a state change, a once-a-second wake-up) and hands that one value to every reader: the dashboard,
the printer (`wait`, `launch`), the notifier, the metrics endpoint, the bundle recorder. Bundles record
Boards, so `report` and `replay` show exactly what was shown live, whatever catalogue their reader has.
A reader only lays a Board out: the verdict, the cause and its next step, the other errors and warnings
(each a :class:`Said`, worded once), the ETA, the elapsed time on the log's own clock, the GPUs' evidence
of a stall and what each key can do now are all decided here.

``build`` is pure: the Session (and a replay, and the tests) give it the nodes' views and what only they
know (the numbering of lines, the log's clock, the GPUs, the profile), and get the Board.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from msgspec import Struct, field
from msgspec.structs import replace

from symmtui.clitext import headless, mmss
from symmtui.judge.diagnose import Diagnosis
from symmtui.judge.eta import LiveEta, about, combined
from symmtui.judge.events import Event
from symmtui.judge.logclock import LogTimes, elapsed
from symmtui.judge.ranks import RankSummary
from symmtui.judge.readiness import Snapshot, State
from symmtui.judge.rules import Action, Kind
from symmtui.judge.verdict import WORDS, Changes, Finding, NodeView, Verdict, verdict_after, verdict_of

INTENTS = ("launch", "relaunch", "patch", "fix", "stacks")
"""The intents a Board says can or cannot be asked now (``Board.why_not``)."""
LIVE = (State.STARTING, State.WAITING, State.STALLED)


class Said(Struct, frozen=True):
    """One error or warning, with everything a reader says of it: its headline and where it is, and the
    catalogue's diagnosis (the cause in words, the next step as the dashboard and as a command say it, the
    intent a key acts on, the typed fix)."""

    event: Event
    headline: str
    where: str
    """``line 10`` / ``line ~300,123`` (the file's numbering), or "" (a process exit has no line)."""
    crash: bool
    cause: str | None = None
    action: str | None = None
    """The next step as the dashboard says it (it may name a key: "press p to ...")."""
    command: str | None = None
    """The next step as a verb says it (a command instead of a key: `symmtui patch apply`)."""
    intent: str | None = None
    fix: Action | None = None
    entry: str = ""
    """The catalogue entry that names it ("" when none does)."""
    source: tuple[str, ...] = ()
    """The public issues the entry comes from."""

    @property
    def diagnosed(self) -> bool:
        return self.cause is not None

    def diagnosis(self) -> Diagnosis | None:
        """The catalogue's diagnosis as the Session gave it (None: no entry names it)."""
        if self.cause is None:
            return None
        return Diagnosis(self.cause, self.action or "", self.intent, self.entry, self.fix, self.source)  # type: ignore[arg-type]


class Eta(Struct, frozen=True):
    """The ETA as shown: ``text`` ("03:10", "about 22 s", "no history yet"; "" when none applies), the
    earlier launches it comes from, and the live rate for the progress bar ("2.1/s", "")."""

    seconds: float | None = None
    text: str = ""
    runs: int = 0
    rate: str = ""


class NodeBoard(Struct, frozen=True):
    """One node as every reader shows it."""

    name: str
    snapshot: Snapshot
    phase_text: str
    elapsed: float
    """The one figure every reader shows as the bring-up's time: the gauge's elapsed, ``READY after N s``
    (`wait`, the notification, the bundle's verdict and its report), the metrics' elapsed and time to READY.
    Live: the seconds since the launch began (on the log's own clock where it holds more than was watched:
    an attach); once final, the verdict's (``judge.verdict.verdict_after``), frozen."""
    ranks: RankSummary | None = None
    cause: Said | None = None
    errors: tuple[Said, ...] = ()
    """The other errors (the cause left out), in order."""
    warnings: tuple[Said, ...] = ()
    eta: Eta = field(default_factory=Eta)
    log_path: str | None = None
    """The file its log can be read back from (the log, or a log command's spool)."""
    launch_id: str | None = None
    generation: int = 0
    caught_up: bool = True
    """What the log held when it was opened has all been judged."""
    settled: bool = True
    """After a crash: the other ranks' copies of the error have had their moment to arrive."""
    log_clock: bool = False
    """``elapsed`` is the verdict's span on the log's own clock (the log held more time than was watched: a
    finished log read at once, an attach), not the watched time."""

    @property
    def state(self) -> State:
        return self.snapshot.state

    @property
    def shown(self) -> tuple[Said, ...]:
        """What the diagnosis panel lists: the cause (or, without one, every error), then the warnings; one
        per distinct diagnosis, at most MAX_SHOWN."""
        return _panel(self.cause, self.errors, self.warnings)


class Relaunch(Struct, frozen=True):
    """What a relaunch does, for the question before it: the grace and each node's command."""

    grace: float
    commands: tuple[tuple[str, str], ...]


class Board(Struct, frozen=True):
    """The bring-up of 1..N nodes as every reader shows it (see the module docstring)."""

    seq: int
    state: State
    node: str
    """The node the verdict is about (crashed, behind, timed out; else the head)."""
    headline: str
    """The header's line."""
    summary: str
    """The line under the state (the gauge's)."""
    detail: str
    """What the state means, without its word (`wait`'s STALLED line)."""
    nodes: tuple[NodeBoard, ...]
    named: bool = False
    patched: bool = False
    timings: tuple[str, ...] = ()
    """Once READY: the phases against earlier launches (``timings: ...`` lines)."""
    changes: Changes | None = None
    """On CRASHED, STALLED, TIMED OUT: what differs from the last READY launch, the likeliest culprit first
    (None: not compared: READY, still starting, no launch history)."""
    gpu_stall: str | None = None
    """While STALLED: what the GPUs say about it ("all 8 GPUs idle")."""
    gpu_slow: str | None = None
    """An NVML call that takes long ("NVML slow: waiting 3 s for a call")."""
    why_not: tuple[tuple[str, str | None], ...] = ()
    """Each intent of INTENTS and why it cannot be asked now (None: it can)."""
    relaunch: Relaunch | None = None
    decided: bool = False
    """A verdict a headless front end may exit on: final, READY only once every node's backlog is judged,
    CRASHED once the other ranks' copies of the error had their moment; no stacks dump on its way."""
    stacks_pending: bool = False

    @property
    def label(self) -> str:
        """``CRASHED``, or ``CRASHED on node1`` when the server has several nodes and one is named."""
        word = WORDS[self.state]
        return f"{word} on {self.node}" if self.named and self.state is not State.READY else word

    @property
    def about(self) -> NodeBoard:
        return next(n for n in self.nodes if n.name == self.node)

    def view(self, name: str | None) -> NodeBoard:
        """Node ``name``'s board (the node the verdict is about when there is no such node)."""
        return next((n for n in self.nodes if n.name == name), self.about)

    @property
    def snapshot(self) -> Snapshot:
        """The named node's snapshot, carrying the verdict's state (a node behind may read STARTING while the
        server is STALLED)."""
        snap = self.about.snapshot
        return snap if snap.state is self.state else replace(snap, state=self.state)

    @property
    def cause(self) -> Said | None:
        return self.about.cause

    @property
    def ranks(self) -> RankSummary | None:
        return self.about.ranks

    @property
    def nodes_line(self) -> str | None:
        """``nodes: gpu-a ready, gpu-b crashed`` (None for one node)."""
        if len(self.nodes) < 2:
            return None
        return "nodes: " + ", ".join(f"{n.name} {n.phase_text}" for n in self.nodes)

    def can(self, intent: str) -> str | None:
        """None when ``intent`` can be asked now, else the one line why not."""
        return dict(self.why_not).get(intent)


MAX_SHOWN = 3


class NodeInput(Struct, frozen=True):
    """What the Session knows of one node besides its view: how its lines are numbered, its log's clock,
    its live progress rate, where its log is, the launch and generation, and its backlog's state."""

    view: NodeView
    label: Callable[[int], str] = lambda no: f"line {no}"
    times: LogTimes | None = None
    live: LiveEta | None = None
    log_path: str | None = None
    launch_id: str | None = None
    generation: int = 0
    caught_up: bool = True
    settled: bool = True
    settle_waited: float = 0.0


def say(event: Event, found: Finding | None, label: Callable[[int], str]) -> Said:
    """The one wording of an event and its diagnosis."""
    diag: Diagnosis | None = found.diagnosis if found is not None else None
    where = label(event.line_no) if event.line_no else ""
    crash = event.kind is Kind.CRASH
    if diag is None:
        return Said(event, event.headline(), where, crash)
    return Said(event, event.headline(), where, crash, diag.cause, diag.action, headless(diag.action),
                diag.intent, diag.fix, diag.id, diag.source)


def _panel(cause: Said | None, errors: Sequence[Said], warnings: Sequence[Said]) -> tuple[Said, ...]:
    """The diagnosis panel's list (see NodeBoard.shown); a cause no entry names still says where to read."""
    out: list[Said] = []
    seen: set[str] = set()
    for said in (*((cause,) if cause is not None else errors), *warnings):
        if said.cause is None or said.cause in seen:
            continue
        seen.add(said.cause)
        out.append(said)
        if len(out) >= MAX_SHOWN:
            break
    if not out and cause is not None:
        where = f"read the log at {cause.where} (n)" if cause.where else "read the last lines of the log"
        out.append(Said(cause.event, cause.headline, cause.where, cause.crash, cause.headline, where,
                        where.replace(" (n)", "")))
    return tuple(out)


def _eta(view: NodeView, live: LiveEta | None) -> Eta:
    snap = view.snapshot
    if snap.state not in LIVE:
        return Eta()
    history = view.eta
    rate = f"{live.rate:.1f}/s" if live is not None else ""
    shown = combined(history, live)
    if shown is None:
        return Eta(None, "no history yet", 0, rate)
    text = about(shown) if history is None else mmss(shown)
    return Eta(shown, text, view.eta_runs if history is not None else 0, rate)


def node_board(node: NodeInput, now: float) -> NodeBoard:
    """One node's board from its view and what the Session knows of it."""
    view = node.view
    snap = view.snapshot
    cause_ev = snap.cause
    cause = say(cause_ev, view.finding(cause_ev), node.label) if cause_ev is not None else None
    errors = tuple(say(e, view.finding(e), node.label) for e in snap.errors
                   if cause_ev is None or e.key != cause_ev.key)
    warnings = tuple(say(w, view.finding(w), node.label) for w in snap.warnings)
    on_log_clock = snap.state.final and bool(verdict_after(snap)[1])
    return NodeBoard(view.name, snap, view.phase_text, elapsed(snap, node.times, now), view.ranks, cause, errors,
                     warnings, _eta(view, node.live), node.log_path,
                     node.launch_id, node.generation, node.caught_up, node.settled, on_log_clock)


SETTLE_MAX = 1.0
"""After a crash, the most a headless front end waits for the other nodes' backlogs before it exits."""


def _decided(verdict: Verdict, nodes: Sequence[NodeInput], stacks_pending: bool) -> bool:
    if not verdict.state.final or stacks_pending:
        return False
    if verdict.state is State.READY:
        return all(n.caught_up for n in nodes)
    if verdict.state is State.CRASHED:
        about = next(n for n in nodes if n.view.name == verdict.node)
        others = all(n.caught_up for n in nodes if n is not about)
        return about.settled and (others or about.settle_waited >= SETTLE_MAX)
    return True


def build(seq: int, nodes: Sequence[NodeInput], now: float, *, verdict: Verdict | None = None, patched: bool = False,
          timings: tuple[str, ...] = (), changes: Changes | None = None,
          gpu_stall: str | None = None, gpu_slow: str | None = None,
          why_not: Mapping[str, str | None] | None = None, relaunch: Relaunch | None = None,
          stacks_pending: bool = False) -> Board:
    """The Board of ``nodes`` (the head first) at ``now`` (the engines' clock); ``verdict``: their
    ``verdict_of``, when the caller has it already."""
    if verdict is None:
        verdict = verdict_of([n.view for n in nodes], patched=patched)
    state = verdict.state
    boards = tuple(node_board(n, now) for n in nodes)
    if len(boards) > 1:  # a quiet worker of a READY server shows as ready (verdict_of's views say so)
        states = {v.name: v for v in verdict.nodes}
        boards = tuple(b if states[b.name].snapshot is b.snapshot else
                       _with_snapshot(b, states[b.name]) for b in boards)
    return Board(
        seq=seq, state=state, node=verdict.node, headline=verdict.headline, summary=verdict.summary,
        detail=verdict.detail, nodes=boards, named=verdict.named, patched=patched,
        timings=timings if state is State.READY else (),
        changes=changes if state in (State.CRASHED, State.STALLED, State.TIMED_OUT) else None,
        gpu_stall=gpu_stall if state is State.STALLED else None, gpu_slow=gpu_slow,
        why_not=tuple((i, (why_not or {}).get(i)) for i in INTENTS), relaunch=relaunch,
        decided=_decided(verdict, nodes, stacks_pending), stacks_pending=stacks_pending,
    )


def _with_snapshot(board: NodeBoard, view: NodeView) -> NodeBoard:
    return replace(board, snapshot=view.snapshot, phase_text=view.phase_text)


def board_of(views: Sequence[NodeView], *, seq: int = 1, now: float = 0.0, **kw: object) -> Board:
    """The Board of ``views`` alone (no numbering, log clock or live rate): a recording's, a test's."""
    return build(seq, [NodeInput(v) for v in views], now, **kw)  # type: ignore[arg-type]
