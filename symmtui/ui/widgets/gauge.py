"""Readiness gauge: a big coloured state, elapsed time, phase, progress bar, ETA and time left to the timeout."""

from __future__ import annotations

from msgspec import Struct
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from symmtui.clitext import mmss
from symmtui.judge.board import Board
from symmtui.judge.readiness import Snapshot, State
from symmtui.judge.verdict import WORDS as STATE_WORDS
from symmtui.textsafe import visible
from symmtui.ui.widgets.fmt import progress_bar, set_content

STATE_ICONS: dict[State, str] = {
    State.WAITING: "…",
    State.STARTING: "▶",
    State.READY: "✔",
    State.CRASHED: "✖",
    State.STALLED: "⏸",
    State.TIMED_OUT: "⌛",
    State.STOPPED: "■",
}


def state_class(state: State) -> str:
    """The CSS class for a state: '-state-timed-out' etc."""
    return "-state-" + STATE_WORDS[state].lower().replace(" ", "-")


def state_var(state: State) -> str:
    """The theme variable for a state colour: '$state-crashed' etc."""
    return "$state-" + STATE_WORDS[state].lower().replace(" ", "-")


PROGRESS_UNITS = {"loading weights": "shards", "capturing CUDA graphs": "batches"}


class Activity(Struct, frozen=True):
    """What symmtui itself is doing (stopping, launching), shown under the state."""

    text: str
    busy: bool = True


class ReadinessGauge(Vertical):
    """Big state banner, then elapsed / phase, a progress bar when the phase has one, ETA and timeout."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Readiness"
        self.snapshot: Snapshot | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="state-banner")
        yield Static("", id="gauge-cause")
        yield Static("", id="gauge-phase")
        yield Static("", id="gauge-bar")
        yield Static("", id="gauge-eta")
        yield Static("", id="gauge-timings")
        yield Static("", id="gauge-ranks")
        yield Static("", id="gauge-nodes")
        yield Static("", id="gauge-activity")

    def on_mount(self) -> None:
        self.query_one("#state-banner", Static).update(Content.styled("… WAITING", "bold"))
        self.query_one("#gauge-cause", Static).update(Content.styled("for the server log", "$muted"))
        self.query_one("#state-banner").add_class(state_class(State.WAITING))

    def _banner(self, state: State) -> Static:
        """The state banner, its class switched to ``state``'s (the theme colours it by class)."""
        banner = self.query_one("#state-banner", Static)
        wanted = state_class(state)
        if not banner.has_class(wanted):  # one restyle: the old class goes without one of its own
            banner.remove_class(*(state_class(s) for s in STATE_WORDS), update=False)
            banner.add_class(wanted)
        return banner

    def show(self, verdict: Board, node: str | None = None) -> None:
        """Lay the Board out: its state and line in the banner; then node ``node``'s elapsed time, phase,
        progress bar, ETA and ranks behind; once READY, the phases that differ from earlier launches; with
        several nodes, one line per node."""
        view = verdict.view(node)
        snapshot = view.snapshot
        self.snapshot = snapshot
        state = verdict.state
        banner = self._banner(state)
        set_content(banner, Content.styled(f"{STATE_ICONS[state]} {STATE_WORDS[state]}", "bold"))
        cause = self.query_one("#gauge-cause", Static)
        set_content(cause, Content.styled(visible(verdict.summary), f"bold {state_var(state)}"))  # log text
        cause.display = bool(verdict.summary)

        phase = snapshot.phase or "—"
        set_content(
            self.query_one("#gauge-phase", Static),
            Content.assemble(
                ("elapsed ", "$muted"), (mmss(view.elapsed), "bold"), ("   phase ", "$muted"), (phase, "bold")
            ),
        )
        bar = self.query_one("#gauge-bar", Static)
        live = snapshot.state in (State.STARTING, State.WAITING, State.STALLED)
        eta = view.eta
        if snapshot.progress_counts is not None and live:
            done, total = snapshot.progress_counts
            unit = PROGRESS_UNITS.get(snapshot.phase or "", "")
            label = f" {done}/{total} {unit}".rstrip() + (f" {eta.rate}" if eta.rate else "")
            width = max(8, (bar.size.width or 40) - len(label) - 1)
            set_content(bar, Content.assemble(progress_bar(done, total, width), label))
            bar.display = True
        else:
            bar.display = False
        eta_parts: list[Content | str | tuple[str, str]] = []
        if eta.text:
            runs = f" (from {eta.runs} earlier launch{'es' if eta.runs != 1 else ''})" if eta.runs else ""
            eta_parts += [("ETA ", "$muted"), (eta.text, "$muted" if eta.seconds is None else "bold"),
                          (runs, "$muted")]
        remaining = snapshot.remaining_timeout
        if live and remaining is not None:
            eta_parts += [("   timeout in ", "$muted"), (mmss(remaining), "bold $warning" if remaining < 60 else "bold")]
        eta_line = self.query_one("#gauge-eta", Static)
        set_content(eta_line, Content.assemble(*eta_parts))
        eta_line.display = bool(eta_parts)
        shown = [t.removeprefix("timings: ") for t in verdict.timings]
        timings_line = self.query_one("#gauge-timings", Static)
        set_content(timings_line, Content.styled("\n".join(shown), "$warning"))
        timings_line.display = bool(shown)
        ranks = self.query_one("#gauge-ranks", Static)
        text = view.ranks.text if view.ranks is not None else ""
        if text:
            set_content(ranks, Content.styled(visible(text), "bold $warning"))
        ranks.display = bool(text)
        self._show_nodes(verdict)

    def _show_nodes(self, verdict: Board) -> None:
        """With several nodes, one line per node: its state and phase, the node the verdict names in bold."""
        nodes = self.query_one("#gauge-nodes", Static)
        nodes.display = len(verdict.nodes) > 1
        if not nodes.display:
            return
        width = max(len(v.name) for v in verdict.nodes)
        lines = []
        for v in verdict.nodes:
            named = v.name == verdict.node
            lines.append(Content.assemble(
                (f"{STATE_ICONS[v.state]} ", state_var(v.state)),
                (v.name.ljust(width), "bold" if named else ""), "  ",
                (visible(v.phase_text), f"bold {state_var(v.state)}" if named else "")))
        set_content(nodes, Content("\n").join(lines))

    def show_activity(self, activity: Activity | None) -> None:
        """A line about what symmtui is doing (stopping the old server, launching the new one)."""
        line = self.query_one("#gauge-activity", Static)
        line.set_class(activity is not None, "-shown")
        if activity is None:
            line.update("")
            line.display = False
        else:
            line.update(Content.styled(("⟳ " if activity.busy else "") + activity.text, "$accent"))
            line.display = True
