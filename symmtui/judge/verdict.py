"""The verdict of a bring-up of 1..N nodes as every renderer shows it: built once, formatted many times.

``findings`` is the one place events get their catalogue diagnosis (``judge.diagnose``), with the
session's own rules and port owner and the patch state; ``verdict_of`` judges the nodes together
(one server is one node: its state is the verdict) into a :class:`Verdict`. The Session builds one
per change and carries it in its messages; the dashboard, the printer, the notifier, the metrics
endpoint, the recorder and ``scan`` only format it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from msgspec import Struct
from msgspec.structs import replace

from symmtui.clitext import duration, mmss
from symmtui.judge.diagnose import Diagnosis, PortOwner, diagnose
from symmtui.judge.events import Event
from symmtui.judge.ranks import RankSummary
from symmtui.judge.readiness import Snapshot, State
from symmtui.judge.rules import PHASE_ORDER, RuleSet

PATCHED_ACTION = "the SM120 patch is applied: press r to relaunch"
WORDS = {State.WAITING: "WAITING", State.STARTING: "STARTING", State.READY: "READY", State.CRASHED: "CRASHED",
         State.STALLED: "STALLED", State.TIMED_OUT: "TIMED OUT", State.STOPPED: "STOPPED"}
_INDEX = {p: i for i, p in enumerate(PHASE_ORDER)}
AHEAD = 1.0  # seconds: a log that holds this much more time than was watched is judged on its own clock


def verdict_after(snap: Snapshot) -> tuple[float | None, str]:
    """How long the bring-up took: the log's own span from its first line to the verdict's line when the
    log holds more time than was watched (a finished log opened, an attach), with the words that say so;
    else the watched time."""
    watched = snap.verdict_elapsed
    if snap.log_span is not None and (watched is None or snap.log_span > watched + AHEAD):
        return snap.log_span, "after its first line"
    return watched, ""


def ready_words(snap: Snapshot) -> str:
    """``in 00:14`` (watched), or ``8m01s after its first line`` (the log's own clock, as `scan` says)."""
    after, how = verdict_after(snap)
    if how and after is not None:
        return f"{duration(after)} {how}"
    return f"in {mmss(after if after is not None else snap.elapsed)}"


class Finding(Struct, frozen=True):
    """An error or warning with the catalogue's diagnosis of it (None: no entry names it)."""

    event: Event
    diagnosis: Diagnosis | None


def findings(events: Iterable[Event], *, ruleset: RuleSet | None = None, port_owner: PortOwner | None = None,
             patched: bool = False) -> tuple[Finding, ...]:
    """Each event with its diagnosis: the session's rules (None: the shipped ones), the port's holder named
    where the entry asks for it, and once the SM120 patch is applied its advice is the relaunch."""
    out: list[Finding] = []
    for event in events:
        found = diagnose(event, ruleset, port_owner=port_owner)
        if found is not None and patched and found.intent == "patch":
            found = replace(found, action=PATCHED_ACTION, intent="relaunch", fix=None)
        out.append(Finding(event, found))
    return tuple(out)


def ordered_events(snap: Snapshot) -> tuple[Event, ...]:
    """What a verdict explains, in order: the cause, the other errors, the warnings."""
    cause = snap.cause
    errors = tuple(e for e in snap.errors if cause is None or e.key != cause.key)
    return (*((cause,) if cause is not None else ()), *errors, *snap.warnings)


class Changes(Struct, frozen=True):
    """What differs from the last READY launch, already worded (``launch.changes``): ``since`` says which
    launch and when (or that there is none to compare with, or that nothing it keeps differs), ``lines``
    the differences, the likeliest culprit first."""

    since: str
    lines: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        """All of it on one line (a notification): ``changed since ...: a; b``."""
        return f"changed {self.since}: {'; '.join(self.lines)}" if self.lines else self.since


class NodeView(Struct, frozen=True):
    """One node as the verdict sees it: its name, its latest snapshot, who is behind inside it, the
    findings of its cause / errors / warnings, and the ETA from its earlier launches."""

    name: str
    snapshot: Snapshot
    ranks: RankSummary | None = None
    findings: tuple[Finding, ...] = ()
    eta: float | None = None
    eta_runs: int = 0

    @property
    def state(self) -> State:
        return self.snapshot.state

    @property
    def phase_text(self) -> str:
        """``loading weights (40%)``, ``crashed``, ``stalled in init distributed``: the node's phase in words."""
        snap = self.snapshot
        phase = snap.phase or "no phase seen"
        if snap.progress is not None and snap.state in (State.STARTING, State.STALLED):
            phase += f" ({snap.progress * 100:.0f}%)"
        if snap.state in (State.STARTING, State.WAITING):
            return phase
        if snap.state is State.STALLED:
            return f"stalled in {phase}"
        return snap.state.value

    def finding(self, event: Event | None) -> Finding | None:
        """The finding of ``event`` (matched by key), if it is among this node's."""
        if event is None:
            return None
        return next((f for f in self.findings if f.event.key == event.key), None)


class Verdict(Struct, frozen=True):
    """The session's verdict: a state, the node it is about (crashed, behind, timed out; else the head),
    the header's line, the line under the state and the state's detail, every node's view, the patch state,
    and once READY the phases against earlier launches (what changed since the last READY launch is the
    Board's: ``judge.board``). ``named``: the texts name the node (a server of several nodes)."""

    state: State
    node: str
    headline: str
    summary: str
    detail: str
    """What the state means, without its word (`wait`'s STALLED line)."""
    nodes: tuple[NodeView, ...]
    named: bool = False
    patched: bool = False
    timings: tuple[str, ...] = ()

    @property
    def about(self) -> NodeView:
        """The view of the node the verdict is about."""
        return next(v for v in self.nodes if v.name == self.node)

    @property
    def snapshot(self) -> Snapshot:
        """That node's snapshot, carrying the verdict's state (the node behind may read STARTING while the
        server is STALLED)."""
        snap = self.about.snapshot
        return snap if snap.state is self.state else replace(snap, state=self.state)

    @property
    def cause(self) -> Event | None:
        return self.about.snapshot.cause

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.about.findings

    @property
    def ranks(self) -> RankSummary | None:
        return self.about.ranks

    @property
    def label(self) -> str:
        """``CRASHED``, or ``CRASHED on node1`` when the server has several nodes and one is named."""
        word = WORDS[self.state]
        return f"{word} on {self.node}" if self.named and self.state is not State.READY else word

    @property
    def nodes_line(self) -> str | None:
        """``nodes: gpu-a ready, gpu-b crashed`` (None for one node)."""
        if len(self.nodes) < 2:
            return None
        return "nodes: " + ", ".join(f"{v.name} {v.phase_text}" for v in self.nodes)

    def view(self, name: str | None) -> NodeView:
        """The view of node ``name`` (the node the verdict is about when there is no such node)."""
        return next((v for v in self.nodes if v.name == name), self.about)


def _phase_index(view: NodeView) -> int:
    return _INDEX.get(view.snapshot.phase or "", -1)


def _behind(views: Sequence[NodeView]) -> NodeView:
    """The node that is behind: the earliest phase; then one with a rank behind; then the longest silent."""
    order = {v.name: i for i, v in enumerate(views)}
    return min(views, key=lambda v: (_phase_index(v), not (v.ranks is not None and v.ranks.behind),
                                     -(v.snapshot.since_activity or 0.0), order[v.name]))


def _others(views: Sequence[NodeView], skip: str) -> str:
    rest = [f"{v.name} {v.phase_text}" for v in views if v.name != skip]
    return f"; {', '.join(rest)}" if rest else ""


def _one_node(view: NodeView, *, patched: bool, timings: tuple[str, ...]) -> Verdict:
    """One server: its state is the verdict; the header says the cause's summary, the phase or the time."""
    snap = view.snapshot
    state, cause = snap.state, snap.cause
    if state in (State.CRASHED, State.TIMED_OUT, State.STALLED) and cause is not None:
        headline, summary = cause.summary, cause.headline()
    elif state is State.READY:
        headline = ready_words(snap)
        summary = f"ready after {headline[3:]}" if headline.startswith("in ") else f"ready {headline}"
    elif state is State.STARTING:
        headline, summary = snap.phase or "", ""
    elif state is State.WAITING:
        headline, summary = snap.detail, "for the server log"
    else:
        headline = summary = snap.detail
    return Verdict(state, view.name, headline, summary, snap.detail, (view,), patched=patched, timings=timings)


def verdict_of(views: Sequence[NodeView], *, patched: bool = False, timings: tuple[str, ...] = ()) -> Verdict:
    """Judge the nodes together; ``views[0]`` is the head (the one that serves the URL).

    CRASHED / STOPPED on the first node that did; READY when the head answers and every other node's
    server got going (its log shows a bring-up phase: a log holding only ssh's "Connection refused" does
    not count); a node that timed out before that makes it TIMED OUT naming that node; TIMED OUT /
    STALLED otherwise name the node behind (earliest phase, then a rank behind, then the longest silent).
    Once READY, a node that went quiet (a server's other nodes log nothing while it serves) shows as ready.
    """
    nodes = tuple(views)
    assert nodes, "a bring-up has at least one node"
    if len(nodes) == 1:
        return _one_node(nodes[0], patched=patched, timings=timings)
    head = nodes[0]

    def made(state: State, about: NodeView, detail: str, shown: tuple[NodeView, ...] = nodes) -> Verdict:
        """``CRASHED on node1: detail``; a server still starting is its detail alone (no line under the state)."""
        starting = state in (State.STARTING, State.WAITING)
        word = f"{WORDS[state]} on {about.name}" if state in (State.CRASHED, State.STOPPED) else WORDS[state]
        text = detail if starting else f"{word}: {detail}"
        return Verdict(state, about.name, text, "" if starting else text, detail, shown, named=True,
                       patched=patched, timings=timings)

    for final in (State.CRASHED, State.STOPPED):
        hit = [v for v in nodes if v.state is final]
        if hit:
            order = {v.name: i for i, v in enumerate(nodes)}
            first = min(hit, key=lambda v: (v.snapshot.verdict_elapsed or v.snapshot.elapsed, order[v.name]))
            snap = first.snapshot
            why = snap.cause.headline() if snap.cause is not None else snap.detail
            return made(final, first, f"{why}{_others(nodes, first.name)}")
    if head.state is State.READY:
        down = [v for v in nodes[1:] if v.snapshot.phase is None]
        if not down:
            shown = (head, *(v if v.state is State.READY else replace(v, snapshot=replace(v.snapshot, state=State.READY))
                             for v in nodes[1:]))
            return made(State.READY, head, f"{head.name} {head.snapshot.detail}{_others(shown, head.name)}", shown)
        late = next((v for v in down if v.state is State.TIMED_OUT), None)
        if late is not None:
            return made(State.TIMED_OUT, late, f"{late.name} never got going (no phase in its log)"
                        f"{_others(nodes, late.name)}")
        names = ", ".join(v.name for v in down)
        text = ", ".join(f"{v.name} {v.phase_text}" for v in nodes)
        return made(State.STARTING, down[0], f"{head.name} answers; waiting for the log of {names}: {text}")
    if any(v.state is State.TIMED_OUT for v in nodes):
        late = _behind(nodes)  # the node behind, timed out or not: the others waited for it
        where = late.snapshot.phase or "no phase seen"
        return made(State.TIMED_OUT, late, f"{late.name} in {where}{_others(nodes, late.name)}")
    if any(v.state is State.STALLED for v in nodes):
        late = _behind(nodes)
        where = late.snapshot.phase or "no phase seen"
        ranks = f", {late.ranks.text}" if late.ranks is not None and late.ranks.text else ""
        why = f": {late.snapshot.detail}" if late.state is State.STALLED and late.snapshot.detail else ""
        return made(State.STALLED, late, f"{late.name} is behind ({where}{ranks}){why}{_others(nodes, late.name)}")
    started = any(v.state is not State.WAITING for v in nodes)
    return made(State.STARTING if started else State.WAITING, head, ", ".join(f"{v.name} {v.phase_text}" for v in nodes))
