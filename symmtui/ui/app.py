"""The symmtui dashboard: GPUs, topology, readiness gauge, log pane, diagnosis, patch and relaunch."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable
from functools import partial, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer

from symmtui.core.diagnose import Diagnosis, diagnose
from symmtui.core.events import Event
from symmtui.core.readiness import Snapshot, State
from symmtui.errors import UserError
from symmtui.session.core import Session
from symmtui.session.messages import StacksTaken
from symmtui.session.nodes import NodeSet, NodesVerdict
from symmtui.textsafe import visible
from symmtui.ui.bridge import (
    EngineBatchPosted,
    GpuSamplePosted,
    NodesPosted,
    NoticePosted,
    StacksPosted,
    TopologyPosted,
    node_poster,
    poster,
)
from symmtui.ui.messages import RelaunchDone, StopProgress
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.screens.help import HelpRow, HelpScreen, help_rows
from symmtui.ui.screens.patch import PatchChanged, PatchScreen
from symmtui.ui.screens.plots import PlotsScreen
from symmtui.ui.screens.processes import ProcessScreen
from symmtui.ui.screens.relaunch import RelaunchScreen
from symmtui.ui.themes import DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes, register_themes
from symmtui.ui.widgets.diagnosis import DiagnosisView
from symmtui.ui.widgets.footer import DashboardFooter
from symmtui.ui.widgets.gauge import Activity, ReadinessGauge, ready_words
from symmtui.ui.widgets.gpu_panel import GpuPanel
from symmtui.ui.widgets.header import StatusHeader
from symmtui.ui.widgets.log_view import LogView
from symmtui.ui.widgets.plots import phase_marks
from symmtui.ui.widgets.stacks import StacksView
from symmtui.ui.widgets.topology import TopologyView

if TYPE_CHECKING:
    from symmtui.core.ranks import RankSummary
    from symmtui.launch.profilefix import ProfileFix

MAX_DIAGNOSES = 3
RELAUNCH_LINGER = 1.5  # seconds the relaunch steps stay on screen after the new server started
PATCHED_ACTION = "the SM120 patch is applied: press r to relaunch"


F = TypeVar("F", bound=Callable[..., None])


def _while_composed(handler: F) -> F:
    """Skip a late message (a worker's or the engine's) that arrives while the app tears its
    widgets down on exit: there is nothing left to show it on."""

    @wraps(handler)
    def wrapper(self: SymmApp, *args: Any) -> None:
        try:
            handler(self, *args)
        except NoMatches:
            self.log.warning(f"{handler.__name__}: dashboard widgets gone (closing); message dropped")

    return cast(F, wrapper)


class SymmApp(App[int]):
    """The dashboard: renders what the Session posts and sends intents (patch, relaunch) back to it."""

    CSS_PATH = "app.tcss"
    TITLE = "symmtui"
    ENABLE_COMMAND_PALETTE = True
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide"), (170, "-huge")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "patch", "Patch", tooltip="The fix of the diagnosis: the SM120 patch or a profile change"),
        Binding("r", "relaunch", "Relaunch", tooltip="Stop the server, wait for GPU memory and port, launch again"),
        Binding("f", "log('toggle_follow')", "Follow", tooltip="Follow the end of the log, or pause"),
        Binding("slash", "log('search')", "Find", key_display="/", tooltip="Search the log; then n / N"),
        Binding("e", "log('toggle_errors')", "Errors", tooltip="Show only crash and warning lines"),
        Binding("n", "log('next')", "Next", tooltip="Next search match (a search is on), else the next error"),
        Binding("N", "log('previous')", "Prev", key_display="N",
                tooltip="Previous search match (a search is on), else the previous error"),
        Binding("right_square_bracket", "log('next_error')", "Next error", key_display="]", show=False,
                tooltip="The next error, always"),
        Binding("left_square_bracket", "log('previous_error')", "Previous error", key_display="[", show=False,
                tooltip="The previous error, always"),
        Binding("i", "log('filter_in')", "Filter in", show=False, tooltip="Show only lines matching a regex"),
        Binding("x", "log('filter_out')", "Filter out", show=False, tooltip="Hide lines matching a regex"),
        Binding("X", "log('clear_filters')", "Clear filters", key_display="X", show=False,
                tooltip="Remove the regex filters"),
        Binding("w", "log('toggle_wrap')", "Wrap", show=False, tooltip="Soft-wrap long log lines, or cut them"),
        Binding("z", "log('toggle_fold')", "Fold", show=False, tooltip="Fold other ranks' copies of a traceback"),
        Binding("g", "log('go_to')", "Go to", show=False, tooltip="Go to a line, a log time or a phase"),
        Binding("colon", "log('command')", "Command", key_display=":", show=False,
                tooltip="lnav-style: filter-in RE, filter-out RE, clear-filters, goto WHERE"),
        Binding("s", "stacks", "Stacks", tooltip="Dump every process of the server now (py-spy)"),
        Binding("P", "processes", "Procs", key_display="P", show=False, tooltip="The processes on the GPUs; k / K signal one"),
        Binding("G", "plots", "Plots", key_display="G", show=False, tooltip="GPU memory and utilisation, the last 10 minutes"),
        Binding("o", "next_node", "Node"),  # a [[nodes]] profile only: whose log, diagnosis and stacks
        Binding("q", "quit", "Quit", tooltip="Quit (the servers keep running)"),
        Binding("question_mark,f1", "help", "Keys", key_display="?", tooltip="Every key and what it does now"),
        Binding("t", "next_theme", "Theme", tooltip="The next theme"),  # last: 80 columns cut it, not q or ?
        Binding("tab", "focus_next", "Focus", show=False),
    ]
    NARROW_KEYS = frozenset({"p", "r", "f", "slash", "e", "n", "s", "q", "question_mark"})
    """The keys the footer shows under 110 columns; ? lists the rest."""

    def __init__(self, session: Session, *, theme: str | None = None, tick: float = 1.0,
                 auto_stacks: bool = True, nodes: NodeSet | None = None) -> None:
        super().__init__()
        self.session = session
        self.nodes = nodes
        """A multi-node server: ``session`` is the node whose log the pane shows (the head); the header and
        the gauge's banner show the aggregate the NodeSet posts, the gauge lists every node's phase."""
        self.nodes_verdict: NodesVerdict | None = None
        self.shown: str | None = session.host if nodes is not None else None
        """The node whose log, diagnosis and stacks the dashboard shows (o cycles; None: one Session)."""
        self.node_chosen = False  # the user pressed o: the aggregate no longer moves the pane
        self._auto_key: tuple[State, str] | None = None  # the aggregate's verdict the pane last moved for
        self._node_snaps: dict[str, Snapshot] = {}
        self._node_ranks: dict[str, RankSummary | None] = {}
        self._node_stacks: dict[str, StacksTaken] = {}
        self._log_paths: dict[str | None, str | None] = {}
        if nodes is not None:
            nodes.auto_stacks = auto_stacks  # the stacks of the node the aggregate names, once per stall
            auto_stacks = False
        session.auto_stacks = auto_stacks  # one dump when the state becomes STALLED
        self._tick_seconds = tick
        self.theme_names = register_themes(self, load_themes())
        self.theme = theme or DEFAULT_THEME
        self.relaunching = False
        self._diag_key: tuple[tuple[Event, ...], tuple[Event, ...], bool] | None = None
        self.last_snapshot: Snapshot | None = None

    # ---- layout ----------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.session.host, self.session.name, id="header")
        with Horizontal(id="top"):
            yield GpuPanel(id="gpus")
            yield ReadinessGauge(id="gauge")
        with Horizontal(id="bottom"):
            with Vertical(id="side"):
                yield DiagnosisView(id="diagnosis")
                yield StacksView(id="stacks")
                with Horizontal(id="actions"):
                    yield Button("Apply SM120 patch (p)", id="btn-patch", variant="warning", compact=True)
                    yield Button("Relaunch (r)", id="btn-relaunch", variant="primary", compact=True)
                yield TopologyView(id="topology")
            if self.nodes is None:
                log = LogView(id="log", classes="log-pane")
                log.border_title = "Log"
                yield log
            else:  # one pane per node, fed by its Session; the shown one is displayed
                for i, node in enumerate(self.nodes.nodes):
                    log = LogView(id=f"log-{i}", classes="log-pane")
                    log.border_title = f"Log · {node.spec.name} (o)"
                    log.display = node.spec.name == self.shown
                    yield log
        yield DashboardFooter(id="footer", narrow_keys=self.NARROW_KEYS)

    @_while_composed
    def on_resize(self, event: events.Resize) -> None:
        """Below 110 columns the footer drops its padding and the palette hint so q still shows."""
        footer = self.query_one("#footer", Footer)
        narrow = event.size.width < 110
        footer.compact = narrow
        footer.show_command_palette = not narrow

    @property
    def log_view(self) -> LogView:
        """The log pane shown (of the shown node, with several)."""
        return self._log_of(self.shown)

    def _log_of(self, node: str | None) -> LogView:
        if self.nodes is None or node is None:
            return self.query_one("#log", LogView)
        i = next(i for i, n in enumerate(self.nodes.nodes) if n.spec.name == node)
        return self.query_one(f"#log-{i}", LogView)

    @property
    def shown_session(self) -> Session:
        """The Session of the shown node (the one Session without nodes)."""
        return self.nodes.node(self.shown).session if self.nodes is not None and self.shown else self.session

    def on_mount(self) -> None:
        self._exit_on_signals()
        if self.nodes is not None:
            self.nodes.attach(node_poster(self.post_message, self.session.host), sample_gpus=True, acks=True)
        else:
            self.session.attach(poster(self.post_message), acks=True)
        if self._tick_seconds > 0:
            self.set_interval(self._tick_seconds, self._tick)
        if self.session.nvml is None:
            self.query_one(TopologyView).show(None, "no NVML in this session" if self.nodes is None
                                              else "no topology for a multi-node server")
        self.log_view.focus()

    def _exit_on_signals(self) -> None:
        """SIGTERM ends the app cleanly (the caller's cleanup runs: the demo stops its servers).
        SIGHUP means the terminal is gone (tmux pane or SSH session closed): clean up at once and
        leave without restoring a terminal that no longer exists (Textual can block writing to it)."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, self.exit, 128 + signal.SIGTERM)
            loop.add_signal_handler(signal.SIGHUP, self._hangup)

    def on_unmount(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop = asyncio.get_running_loop()
            loop.remove_signal_handler(signal.SIGTERM)
            loop.remove_signal_handler(signal.SIGHUP)

    def _hangup(self) -> None:
        try:
            self.session.close()
        finally:
            os._exit(128 + signal.SIGHUP)

    # ---- engine -> screen ------------------------------------------------------------------

    def on_engine_batch_posted(self, message: EngineBatchPosted) -> None:
        sender = self.nodes.node(message.node).session if self.nodes is not None and message.node else self.session
        try:
            self._show_batch(message)
        finally:
            sender.batch_done()  # the engine may send the next batch (it collected meanwhile)

    @_while_composed
    def _show_batch(self, message: EngineBatchPosted) -> None:
        batch = message.batch
        node = message.node
        shown = node is None or node == self.shown
        log = self._log_of(node)
        if batch.restarted:
            log.reset(batch.log_path)
            self._log_paths[node] = batch.log_path
            if shown:
                self._diag_key = None
        elif batch.log_path != self._log_paths.get(node):
            log.set_file(batch.log_path)
            self._log_paths[node] = batch.log_path
        if batch.lines:
            log.append_lines(batch.lines)
        if batch.events:
            log.add_events(batch.events)
        for notice in batch.notices:
            # the follower's "following PATH" would read as "following" next to a paused pane
            log.border_subtitle = f"file {notice.path}" if notice.kind == "opened" else notice.message
            text = notice.message if node is None else f"{node}: {notice.message}"
            if notice.kind == "error":
                self.notify(text, severity="error")
            elif notice.kind == "exited":  # a log command ended (container restarted, ssh dropped)
                self.notify(text, severity="warning")
        if node is not None:
            self._node_snaps[node] = batch.snapshot
            self._node_ranks[node] = batch.ranks
        if shown:
            self.query_one(ReadinessGauge).show_ranks(batch.ranks)
            self.show_snapshot(batch.snapshot)

    @_while_composed
    def _tick(self) -> None:
        snap = self.shown_session.snapshot_now()
        if snap is not None:
            self.show_snapshot(snap)
        sampler = self.session.sampler
        if sampler is not None:
            self.query_one(GpuPanel).show_busy(sampler.busy_for())

    def show_snapshot(self, snap: Snapshot) -> None:
        """Render one readiness snapshot: header, gauge, diagnosis."""
        self.last_snapshot = snap
        gauge = self.query_one(ReadinessGauge)
        eta, runs = self.shown_session.eta_for(snap)
        timings = self.shown_session.timings
        gauge.show(snap, eta=eta, eta_runs=runs,
                   timings=timings.lines() if timings is not None and snap.state is State.READY else None,
                   log_times=self.log_view.log_times())
        if self.nodes_verdict is not None:  # the aggregate over the shown node's own state
            gauge.show_nodes(self.nodes_verdict)
        detail = ""
        if snap.state in (State.CRASHED, State.TIMED_OUT, State.STALLED) and snap.cause is not None:
            detail = snap.cause.summary
        elif snap.state is State.STARTING:
            detail = snap.phase or ""
        elif snap.state is State.READY:
            detail = ready_words(snap)
        elif snap.detail:
            detail = snap.detail
        if self.nodes_verdict is not None:
            self.query_one(StatusHeader).show(self.nodes_verdict.state, self.nodes_verdict.text)
        else:
            self.query_one(StatusHeader).show(snap.state, detail)
        self.query_one(GpuPanel).show_stall(snap.state is State.STALLED)
        self.query_one(StacksView).show_state(snap.state)
        if isinstance(self.screen, PlotsScreen):
            self.screen.marks = self._phase_marks()
        key = (snap.errors, snap.warnings, self.patch_applied)
        if key != self._diag_key:
            self._diag_key = key
            self.query_one(DiagnosisView).show(self.diagnoses(snap))

    def diagnoses(self, snap: Snapshot) -> list[tuple[Event, Diagnosis]]:
        """Cause first, then the other errors, then warnings; one block per distinct diagnosis."""
        ordered: list[Event] = []
        if snap.cause is not None:
            ordered.append(snap.cause)
        else:
            ordered += list(snap.errors)
        ordered += list(snap.warnings)
        out: list[tuple[Event, Diagnosis]] = []
        seen: set[str] = set()
        for event in ordered:
            diag = diagnose(event)
            if diag is None:
                continue
            if diag.cause in seen:
                continue
            seen.add(diag.cause)
            if self.patch_applied and diag.intent == "patch":
                diag = Diagnosis(diag.cause, PATCHED_ACTION, "relaunch")
            out.append((event, diag))
            if len(out) >= MAX_DIAGNOSES:
                break
        if not out and snap.cause is not None:
            out.append((snap.cause, Diagnosis(snap.cause.headline(), f"read the log at line {snap.cause.line_no} (n)")))
        return out

    @_while_composed
    def on_nodes_posted(self, message: NodesPosted) -> None:
        """The aggregate of a multi-node server changed: banner, header and each node's phase."""
        verdict = self.nodes_verdict = message.verdict
        self.query_one(ReadinessGauge).show_nodes(verdict)
        self.query_one(StatusHeader).show(verdict.state, verdict.text)
        if verdict.state in (State.CRASHED, State.STALLED) and verdict.node is not None:
            key = (verdict.state, verdict.node)
            if key != self._auto_key:  # once per verdict: the pane moves to the node the aggregate names
                self._auto_key = key
                if not self.node_chosen and verdict.node != self.shown:
                    self.show_node(verdict.node)
        else:
            self._auto_key = None

    def action_next_node(self) -> None:
        """o: show the next node's log, diagnosis and stacks (the aggregate stops moving the pane)."""
        if self.nodes is None:
            return
        names = [n.spec.name for n in self.nodes.nodes]
        i = names.index(self.shown) if self.shown in names else -1
        self.node_chosen = True
        self.show_node(names[(i + 1) % len(names)])
        self.notify(f"log, diagnosis and stacks of {self.shown}", timeout=2)

    @_while_composed
    def show_node(self, name: str) -> None:
        """Show ``name``'s log pane, its latest snapshot (diagnosis, ranks) and its last stacks dump."""
        if self.nodes is None or name == self.shown:
            return
        had_focus = self.log_view.has_focus_within
        self.log_view.display = False
        self.shown = name
        log = self.log_view
        log.display = True
        if had_focus:
            log.focus()
        self._diag_key = None
        snap = self._node_snaps.get(name)
        if snap is not None:
            self.query_one(ReadinessGauge).show_ranks(self._node_ranks.get(name))
            self.show_snapshot(snap)
        taken = self._node_stacks.get(name)
        if taken is not None:
            self.query_one(StacksView).show(taken)

    @_while_composed
    def on_gpu_sample_posted(self, message: GpuSamplePosted) -> None:
        panel = self.query_one(GpuPanel)
        panel.show(message.sample.snapshot, message.sample.our_pids)
        screen = self.screen
        if isinstance(screen, ProcessScreen):
            screen.show(message.sample.snapshot, message.sample.our_pids)
        elif isinstance(screen, PlotsScreen):
            screen.show(panel.history, self._phase_marks())

    def _phase_marks(self) -> list[tuple[float, str]]:
        return phase_marks(self.last_snapshot, time.monotonic(), time.time())

    def action_processes(self) -> None:
        """P: the processes on the GPUs (k / K signal the selected one, after a yes)."""
        panel = self.query_one(GpuPanel)
        self.push_screen(ProcessScreen(panel.snapshot, panel.our_pids))

    def action_plots(self) -> None:
        """G: every GPU's memory and utilisation over the last 10 minutes, the phases marked."""
        self.push_screen(PlotsScreen(self.query_one(GpuPanel).history, self._phase_marks()))

    def action_help(self) -> None:
        """? / F1: every key and what it does now."""
        extra = [HelpRow("dialogs", "y  n", "in a dialog: y or Enter answers yes, n or Escape no")]
        self.push_screen(HelpScreen(help_rows(self.screen, note=self.key_note, extra=extra)))

    def key_note(self, action: str) -> str | None:
        """Why a key does nothing now (the help screen says it), or None."""
        if action == "relaunch":
            return self.session.can_relaunch
        if action == "log('next')" and self.log_view.search_text:
            return f"a search is on: the matches of /{self.log_view.search_text}/"
        return None

    def action_export(self) -> None:
        """Write the lines the log pane shows (filters applied) to the state directory."""
        from symmtui.paths import state_dir

        name = Path(self._log_paths.get(self.shown) or "log").name
        path = state_dir("exports") / f"{name}.{time.strftime('%Y%m%d-%H%M%S')}.txt"
        self.log_view.export(path)

    @_while_composed
    def on_topology_posted(self, message: TopologyPosted) -> None:
        self.query_one(TopologyView).show(message.topology.topology, message.topology.reason)

    @_while_composed
    def on_stacks_posted(self, message: StacksPosted) -> None:
        if message.taken.node is not None:
            self._node_stacks[message.taken.node] = message.taken
        self.query_one(StacksView).show(message.taken)
        if message.taken.saved:
            self.notify(f"stacks saved: {message.taken.saved}", timeout=4)

    def action_stacks(self) -> None:
        """Dump every process of the server now (py-spy, on a worker thread); the panel shows it."""
        whose = f"{self.shown}'s" if self.shown is not None else "the server's"
        self.notify(f"reading the stacks of {whose} processes…", timeout=2)
        self.shown_session.request_stacks()

    def on_notice_posted(self, message: NoticePosted) -> None:
        notice = message.notice
        severity = notice.severity if notice.severity in ("information", "warning", "error") else "information"
        self.notify(notice.text, severity=severity)  # type: ignore[arg-type]

    # ---- intents ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Dashboard keys are inactive while a modal is open (the modal has its own)."""
        if action == "next_node" and self.nodes is None:
            return False  # not in the footer: one server, one log
        if action in {"patch", "relaunch", "log", "next_theme", "stacks", "next_node", "processes", "plots",
                      "help"} and isinstance(self.screen, ModalScreen):
            return False
        return True

    def action_log(self, name: str) -> None:
        log = self.log_view
        getattr(log, f"action_{name}")()

    def action_patch(self) -> None:
        """p: the fix for the selected diagnosis: a profile change (flag/env) shown as a TOML diff and
        applied on confirm, then the relaunch; otherwise the SM120 patch modal."""
        if self._offer_profile_fix():
            return
        if self.session.patcher is None:
            self.notify("no SGLang/vLLM install to patch in this session (use symmtui patch)", severity="warning")
            return
        self.push_screen(PatchScreen(self.session), self._patch_closed)

    def _offer_profile_fix(self) -> bool:
        """Show the profile change of the first diagnosis whose action is a flag or env var; True if handled."""
        from symmtui.launch.profilefix import APPLICABLE, plan

        snap = self.last_snapshot
        sup = self.session.supervisor
        if snap is None or sup is None or sup.profile.path is None:
            return False
        for _event, diag in self.diagnoses(snap):
            if diag.fix is None or diag.fix.type not in APPLICABLE:
                continue
            try:
                fix = plan(sup.profile.path, diag.fix)
            except UserError as exc:
                self.notify(visible(str(exc)), severity="warning", timeout=8)
                return True
            if not fix.changed:
                self.notify(f"{fix.path.name} already has this change: press r to relaunch")
                return True
            diff = "\n".join(visible(line) for line in fix.diff.splitlines())
            body = Content(f"{visible(diag.cause)}\n\nnext: {visible(diag.action)}\n\n{diff}")
            self.push_screen(ConfirmScreen("Apply the fix to the profile?", body, yes="Apply"),
                             partial(self._fix_confirmed, fix))
            return True
        return False

    def _fix_confirmed(self, fix: ProfileFix, yes: bool | None) -> None:
        """Write the profile change (atomically), use it for the next launch, then offer the relaunch."""
        from symmtui.launch.profile import load_profile
        from symmtui.launch.profilefix import apply

        if not yes:
            return
        sup = self.session.supervisor
        try:
            apply(fix)
            if sup is not None:
                sup.profile = load_profile(fix.path)
        except UserError as exc:
            self.notify(visible(str(exc)), severity="error", timeout=8)
            return
        self.notify(f"{fix.path.name} updated ({fix.action.type} {fix.action.flag or fix.action.env})")
        self.action_relaunch()

    def _patch_closed(self, relaunch: bool | None) -> None:
        """The patch modal closed; with r pressed there, ask to relaunch (the README's p, y, r, y)."""
        if relaunch:
            self.action_relaunch()

    @property
    def patch_applied(self) -> bool:
        """The SM120 patch was applied in this session (the session keeps it, as data)."""
        return self.session.patch_applied

    @_while_composed
    def on_patch_changed(self, message: PatchChanged) -> None:
        if message.error:
            self.notify(message.text, severity="error", timeout=8)
            return
        self.notify(message.text)
        self.query_one(StatusHeader).show(
            self.query_one(StatusHeader).state, self.query_one(StatusHeader).detail,
            note="patched" if self.patch_applied else "",
        )
        if self.last_snapshot is not None:
            self._diag_key = None
            self.show_snapshot(self.last_snapshot)

    def action_relaunch(self) -> None:
        why = self.session.can_relaunch
        if why is not None:
            self.notify(why, severity="warning", timeout=8)
            return
        if self.relaunching:
            self.notify("a relaunch is already in progress")
            return
        sup = self.session.supervisor
        assert sup is not None
        command = sup.profile.command_text or " ".join(sup.profile.argv or ())
        body = (
            f"Stop the running server (SIGTERM, then SIGKILL after {sup.grace:.0f} s), wait for its GPU memory "
            f"and port to be released, then launch again:\n\n  {command}"
        )
        if self.nodes is not None:
            launches = "\n".join(f"  {n.spec.name}: {n.spec.launch_text}" for n in self.nodes.nodes)
            body = (f"Stop every node (its stop command, then its launch: SIGTERM, SIGKILL after {sup.grace:.0f} s), "
                    f"then launch every node again:\n\n{launches}")
        self.push_screen(ConfirmScreen("Relaunch?", body, yes="Relaunch"), self._relaunch_confirmed)

    def _relaunch_confirmed(self, yes: bool | None) -> None:
        if not yes:
            return
        self.relaunching = True
        self.query_one(ReadinessGauge).show_activity(Activity("stopping the server…"))
        self.push_screen(RelaunchScreen())
        self.run_relaunch()

    @work(thread=True, exclusive=True, group="relaunch")
    def run_relaunch(self) -> None:
        def progress(p: object) -> None:
            self.post_message(StopProgress(p))  # type: ignore[arg-type]

        if self.nodes is not None:
            try:
                records = self.nodes.launch(lambda _node: progress)
            except (UserError, OSError) as exc:
                self.post_message(RelaunchDone(str(exc), ""))
                return
            done = ", ".join(f"{n.spec.name} pid {r.pid}" for n, r in zip(self.nodes.nodes, records, strict=True))
            self.post_message(RelaunchDone(None, f"launched {done}"))
            return
        try:
            result = self.session.relaunch(progress)
        except (UserError, OSError) as exc:  # an OSError the launcher did not word: shown, not a crash
            self.post_message(RelaunchDone(str(exc), ""))
            return
        note = "; ".join(result.warnings)
        summary = f"launched pid {result.record.pid}" + (f" ({note})" if note else "")
        self.post_message(RelaunchDone(None, summary))

    @_while_composed
    def on_stop_progress(self, message: StopProgress) -> None:
        self.query_one(ReadinessGauge).show_activity(Activity(message.progress.message))
        screen = self.screen
        if isinstance(screen, RelaunchScreen):
            screen.add_progress(message.progress)

    @_while_composed
    def on_relaunch_done(self, message: RelaunchDone) -> None:
        self.relaunching = False
        gauge = self.query_one(ReadinessGauge)
        screen = self.screen
        if message.error is not None:
            gauge.show_activity(Activity("relaunch failed: " + message.error, busy=False))
            if isinstance(screen, RelaunchScreen):
                screen.finish(message.error, error=True)
            else:
                self.notify(message.error, severity="error", timeout=10)
            return
        gauge.show_activity(Activity(message.summary, busy=False))
        if isinstance(screen, RelaunchScreen):
            screen.finish(message.summary, error=False)
            self.set_timer(RELAUNCH_LINGER, lambda: screen.dismiss() if screen.is_current else None)
        self.notify("relaunched: " + message.summary)

    def action_next_theme(self) -> None:
        names = self.theme_names
        if not names:
            return
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"theme: {self.theme}", timeout=2)

    def action_set_theme(self, name: str) -> None:
        self.theme = name

    async def action_quit(self) -> None:
        if self.relaunching:
            self.push_screen(
                ConfirmScreen("Quit?", "A relaunch is in progress; quit anyway? (it continues in the background)",
                              yes="Quit"),
                lambda yes: self.exit(0) if yes else None,
            )
            return
        self.exit(0)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "btn-patch":
            self.action_patch()
        elif event.button.id == "btn-relaunch":
            self.action_relaunch()

    # ---- command palette -------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Apply SM120 patch", "Check, show the diff, apply or revert (p)", self.action_patch)
        yield SystemCommand("Relaunch", "Stop the server, wait for GPU memory and port, launch again (r)",
                            self.action_relaunch)
        yield SystemCommand("Stacks", "Dump every process of the server now (s)", self.action_stacks)
        yield SystemCommand("Process view", "The processes on the GPUs; k / K signal one (P)", self.action_processes)
        yield SystemCommand("GPU plots", "Memory and utilisation, the last 10 minutes, phases marked (G)",
                            self.action_plots)
        yield SystemCommand("Keys", "Every key and what it does now (? or F1)", self.action_help)
        yield SystemCommand("Export the log lines shown", "The pane's lines, filters applied, to the state "
                            "directory", self.action_export)
        yield SystemCommand("Next theme", "Cycle the symmtui themes (t)", self.action_next_theme)
        if self.nodes is not None:
            yield SystemCommand("Next node", "Show the next node's log, diagnosis and stacks (o)",
                                self.action_next_node)
        for name in self.theme_names:
            yield SystemCommand(f"Theme: {name}", f"Switch to the {name} theme",
                                partial(self.action_set_theme, name))
        if self.screen.query("#log"):
            yield from self.log_view.commands()


def app_css_path() -> Path:
    """Where app.tcss lives (next to this module)."""
    return Path(__file__).with_name("app.tcss")
