"""What a verdict notification says: a title and a few lines, laid out from the Board (log text made safe for a
terminal and redacted: a notification leaves the process; a fix said as a command, not a key)."""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import replace

from symmtui.judge.board import Board
from symmtui.judge.readiness import State
from symmtui.redact import redact
from symmtui.textsafe import shorten, visible

MAX_LINE = 300  # one line of a notification, at most (a cause headline can be long)

WORDS = {State.READY: "READY", State.CRASHED: "CRASHED", State.STALLED: "STALLED", State.TIMED_OUT: "TIMED OUT"}
VERDICT_KEYS = {State.READY: "ready", State.CRASHED: "crashed", State.STALLED: "stalled",
                State.TIMED_OUT: "timed_out"}


class VerdictNote(Struct, frozen=True):
    """One verdict, told: ``headline`` (``READY after 95.2 s``), ``lines`` under it (next step, comparisons)."""

    state: str
    """``READY``, ``CRASHED``, ``STALLED``, ``TIMED OUT``."""
    verdict: str
    """The key in ``[notify] on`` and the JSON body: ``ready``, ``crashed``, ``stalled``, ``timed_out``."""
    headline: str
    lines: tuple[str, ...]
    name: str
    host: str
    elapsed: float
    phase: str | None
    cause: str | None
    next: str | None
    log_path: str | None
    launch_id: str | None
    generation: int = 0

    @property
    def title(self) -> str:
        """``symmtui: READY · eagle3/symmtui.toml on gpu-7``."""
        return f"symmtui: {self.state} · {self.name} on {self.host}"

    @property
    def text(self) -> str:
        """The headline and its lines, one per line."""
        return "\n".join((self.headline, *self.lines))

    def with_lines(self, more: tuple[str, ...]) -> VerdictNote:
        return replace(self, lines=(*self.lines, *more)) if more else self


def _safe(text: str) -> str:
    """One line: secrets masked (before the cut, so no half secret is left), controls shown as text."""
    return shorten(visible(redact(text).replace("\r\n", " ").replace("\n", " ")), MAX_LINE)


def note_of(verdict: Board, *, name: str, host: str, log_path: str | None = None,
            launch_id: str | None = None, generation: int = 0) -> VerdictNote | None:
    """The note of a verdict that notifies (None for the others: STOPPED, STARTING, ...); with several nodes
    it names the node (``CRASHED on node1 after ...``, the host is the node) and lists every node's phase."""
    state = verdict.state
    if state not in WORDS:
        return None
    snap = verdict.snapshot
    word = verdict.label
    after = verdict.about.elapsed  # the Board's one figure (`wait` and the bundle say the same)
    phase = snap.phase
    cause: str | None = None
    action: str | None = None
    lines: list[str] = []
    if state is State.READY:
        headline = f"READY after {after:.1f} s"
    elif state is State.CRASHED:
        said = verdict.cause
        cause = _safe(said.headline) if said is not None else _safe(snap.detail or "the server exited")
        headline = f"{word} after {after:.1f} s: {cause}"
        action = _safe(said.command) if said is not None and said.command else None
    elif state is State.STALLED:  # the Board's words for the stall, as `wait`'s STALLED line says them
        cause = _safe(verdict.detail or "no progress")
        headline = f"{word} after {after:.1f} s in {phase or 'no phase yet'}: {cause}"
        ranks = verdict.ranks.text if verdict.ranks is not None else ""
        if ranks and ranks not in verdict.detail:
            lines.append(_safe(f"ranks: {ranks}"))
    else:
        where = phase or "no phase seen"
        if snap.progress is not None:
            where += f" ({snap.progress * 100:.0f}%)"
        headline = f"{word} after {after:.1f} s in {where}"
    if action:
        lines.insert(0, f"next: {action}")
    if state is State.READY:
        lines += [_safe(t) for t in verdict.timings]
    elif verdict.changes is not None:  # one line: what changed since the last READY launch, culprit first
        lines.append(_safe(verdict.changes.line))
    if verdict.nodes_line is not None:
        lines.append(_safe(verdict.nodes_line))
    return VerdictNote(WORDS[state], VERDICT_KEYS[state], headline, tuple(lines), _safe(name),
                       _safe(verdict.node if verdict.named else host), after, phase, cause, action,
                       redact(log_path) if log_path else log_path,
                       launch_id, generation)
