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
from typing import Any, ClassVar, TypeVar, cast

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input

from symmtui import boundary
from symmtui.core.board import Board
from symmtui.core.readiness import State
from symmtui.errors import UserError
from symmtui.launch.profilefix import ProfileFix
from symmtui.paths import state_dir
from symmtui.session.intents import ApplyFix, Intent, Launch, PlanFix, RequestStacks
from symmtui.session.mailbox import Mailbox
from symmtui.session.messages import (
    Bell,
    EngineBatch,
    GpuRound,
    Notice,
    SessionMessage,
    StacksTaken,
    TopologyRead,
    VerdictReached,
)
from symmtui.session.protocol import SessionLike
from symmtui.textsafe import visible
from symmtui.ui.messages import FixApplied, FixPlanned, IntentRefused, MailReady, RelaunchDone, StopProgress
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.screens.help import HelpRow, HelpScreen, help_rows
from symmtui.ui.screens.patch import PatchChanged, PatchScreen
from symmtui.ui.screens.plots import PlotsScreen
from symmtui.ui.screens.processes import ProcessScreen
from symmtui.ui.screens.relaunch import RelaunchScreen
from symmtui.ui.themes import DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes, register_themes
from symmtui.ui.widgets.diagnosis import DiagnosisView
from symmtui.ui.widgets.footer import DashboardFooter
from symmtui.ui.widgets.gauge import Activity, ReadinessGauge
from symmtui.ui.widgets.gpu_panel import GpuPanel
from symmtui.ui.widgets.header import StatusHeader
from symmtui.ui.widgets.log_view import LogSearch, LogView
from symmtui.ui.widgets.plots import phase_marks
from symmtui.ui.widgets.stacks import StacksView
from symmtui.ui.widgets.topology import TopologyView

RELAUNCH_LINGER = 1.5  # seconds the relaunch steps stay on screen after the new server started
OPENING = 1.0  # seconds a search box may take to get the focus; keys typed meanwhile go into it
KEYS = frozenset({"patch", "relaunch", "log", "next_theme", "stacks", "next_node", "processes", "plots", "help",
                  "quit"})
"""The dashboard's own keys: none acts while a text box has the focus or is opening."""
PROMPT_KEYS = frozenset({"slash", "i", "x", "g", "colon"})
"""The keys that open the log pane's text box (search, filter in/out, go to, command: log_view.LogSearch)."""


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
    """The dashboard: renders what the Session posts and sends intents (patch, relaunch) back to it.

    One log pane per node (one server: one pane); ``o`` switches the pane, and with it the diagnosis,
    the gauge's details and the stacks, to the next node. The header and the banner show the verdict."""

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
        Binding("o", "next_node", "Node"),  # a server of several nodes only: whose log, diagnosis and stacks
        Binding("q", "quit", "Quit", tooltip="Quit (the servers keep running)"),
        Binding("question_mark,f1", "help", "Keys", key_display="?", tooltip="Every key and what it does now"),
        Binding("t", "next_theme", "Theme", tooltip="The next theme"),  # last: 80 columns cut it, not q or ?
        Binding("tab", "focus_next", "Focus", show=False),
    ]
    NARROW_KEYS = frozenset({"p", "r", "f", "slash", "e", "n", "s", "q", "question_mark"})
    """The keys the footer shows under 110 columns; ? lists the rest."""

    def __init__(self, session: SessionLike, *, theme: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.session = session
        self.shown: str = session.nodes[0]
        """The node whose log, diagnosis and stacks the dashboard shows (o cycles)."""
        self.node_chosen = False  # the user pressed o: the verdict no longer moves the pane
        self._moved_for: tuple[State, str] | None = None  # the verdict the pane last moved for
        self._stacks: dict[str, StacksTaken] = {}
        self._log_paths: dict[str, str | None] = {}
        self.clock = clock
        """The app's clock: every guard and timer of the dashboard reads it (tests set one they drive)."""
        self.theme_names = register_themes(self, load_themes())
        self.theme = theme or DEFAULT_THEME
        self.relaunching = False
        self._opening: float | None = None  # when a text box was asked for (it gets the focus a moment later)
        self._typed = ""  # the keys typed since, for the box once it has the focus
        self.board: Board | None = None
        """The Board shown (the Session posts one with every batch and once a second)."""
        self._mailbox: Mailbox | None = None

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
            for i, node in enumerate(self.session.nodes):  # one pane per node; the shown one is displayed
                log = LogView(id=f"log-{i}", classes="log-pane")
                log.border_title = f"Log · {node} (o)" if self.session.named else "Log"
                log.display = node == self.shown
                yield log
        yield DashboardFooter(id="footer", narrow_keys=self.NARROW_KEYS)

    @_while_composed
    def on_resize(self, event: events.Resize) -> None:
        """Below 110 columns the footer drops its padding and the palette hint so q still shows."""
        footer = self.query_one("#footer", Footer)
        narrow = event.size.width < 110
        if (footer.compact, footer.show_command_palette) != (narrow, not narrow):
            footer.show_command_palette = not narrow
            footer.compact = narrow  # the footer recomposes: the important keys only, no palette key, when narrow

    @property
    def log_view(self) -> LogView:
        """The log pane shown."""
        return self._log_of(self.shown)

    def _log_of(self, node: str) -> LogView:
        return self.query_one(f"#log-{self.session.nodes.index(node)}", LogView)

    def on_mount(self) -> None:
        self._exit_on_signals()
        self._mailbox = self.session.attach(lambda: self.post_message(MailReady()))
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
        boundary.hold_signals()  # asyncio left them at their default: the clean-up after this must not be cut

    def _hangup(self) -> None:
        try:
            self.session.close()
        finally:
            os._exit(128 + signal.SIGHUP)

    # ---- the Session's mail -> screen --------------------------------------------------------

    def on_mail_ready(self, _message: MailReady) -> None:
        """Take everything the mailbox holds (each node's lines merged, the latest verdict and GPU round)."""
        if self._mailbox is None:
            return
        for message in self._mailbox.take():
            self._show(message)

    @_while_composed
    def _show(self, message: SessionMessage) -> None:
        if isinstance(message, EngineBatch):
            self._show_batch(message)
        elif isinstance(message, GpuRound):
            self._show_gpus(message)
        elif isinstance(message, TopologyRead):
            self.query_one(TopologyView).show(message.topology, message.reason)
        elif isinstance(message, StacksTaken):
            self._show_stacks(message)
        elif isinstance(message, VerdictReached):
            self._follow_verdict(message.board)
        elif isinstance(message, Bell):
            self.bell()
        elif isinstance(message, Notice):
            severity = message.severity if message.severity in ("information", "warning", "error") else "information"
            self.notify(message.text, severity=severity)  # type: ignore[arg-type]

    def _show_batch(self, batch: EngineBatch) -> None:
        node = batch.node
        log = self._log_of(node)
        if batch.restarted:
            log.reset(batch.log_path)
            self._log_paths[node] = batch.log_path
            if self._stacks.pop(node, None) is not None and node == self.shown:
                self.query_one(StacksView).clear()  # the dump was of the launch before
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
            text = f"{node}: {notice.message}" if self.session.named else notice.message
            if notice.kind == "error":
                self.notify(text, severity="error")
            elif notice.kind == "exited":  # a log command ended (container restarted, ssh dropped)
                self.notify(text, severity="warning")
        self.show_board(batch.board)

    def show_board(self, board: Board) -> None:
        """Lay the Board out: header, gauge and diagnosis of the shown node, the GPUs' stall evidence and a
        slow NVML call; the stacks panel and an open plots screen follow the state."""
        self.board = board
        self.query_one(StatusHeader).show(board)
        self.query_one(ReadinessGauge).show(board, self.shown)
        panel = self.query_one(GpuPanel)
        panel.show_stall(board.gpu_stall)
        panel.show_slow(board.gpu_slow)
        self.query_one(StacksView).show_state(board.state)  # the dump is of the node the verdict names
        if isinstance(self.screen, PlotsScreen):
            self.screen.marks = self._phase_marks()
        view = board.view(self.shown)
        self.query_one(DiagnosisView).show(view.shown, board.changes if view.name == board.node else None)

    def _show_gpus(self, message: GpuRound) -> None:
        """A GPU round: the panel, and an open process view or plots screen."""
        panel = self.query_one(GpuPanel)
        panel.show(message.snapshot, message.our_pids)
        screen = self.screen
        if isinstance(screen, ProcessScreen):
            screen.show(message.snapshot, message.our_pids)
        elif isinstance(screen, PlotsScreen):
            screen.show(panel.history, self._phase_marks())

    def _phase_marks(self) -> list[tuple[float, str]]:
        """When each phase of the shown node's bring-up began, for the plots."""
        snap = self.board.view(self.shown).snapshot if self.board is not None else None
        return phase_marks(snap, time.monotonic(), time.time())

    def action_processes(self) -> None:
        """P: the processes on the GPUs (k / K signal the selected one, after a yes)."""
        panel = self.query_one(GpuPanel)
        self.push_screen(ProcessScreen(panel.snapshot, panel.our_pids, self.session))

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
            return self.board.can("relaunch") if self.board is not None else None
        if action == "log('next')" and self.log_view.search_text:
            return f"a search is on: the matches of /{self.log_view.search_text}/"
        return None

    def action_export(self) -> None:
        """Write the lines the log pane shows (filters applied) to the state directory."""
        name = Path(self._log_paths.get(self.shown) or "log").name
        path = state_dir("exports") / f"{name}.{time.strftime('%Y%m%d-%H%M%S')}.txt"
        self.log_view.export(path)

    def _follow_verdict(self, verdict: Board) -> None:
        """A verdict that names a node (CRASHED, STALLED on it) moves the pane there once, until the user chose."""
        if verdict.state in (State.CRASHED, State.STALLED):
            key = (verdict.state, verdict.node)
            if key != self._moved_for:
                self._moved_for = key
                if not self.node_chosen and verdict.node != self.shown:
                    self.show_node(verdict.node)
        else:
            self._moved_for = None

    def action_next_node(self) -> None:
        """o: show the next node's log, diagnosis and stacks (the verdict stops moving the pane)."""
        names = self.session.nodes
        self.node_chosen = True
        self.show_node(names[(names.index(self.shown) + 1) % len(names)])
        self.notify(f"log, diagnosis and stacks of {self.shown}", timeout=2)

    @_while_composed
    def show_node(self, name: str) -> None:
        """Show ``name``'s log pane, its part of the verdict (diagnosis, ranks) and its last stacks dump."""
        if name == self.shown:
            return
        had_focus = self.log_view.has_focus_within
        self.log_view.display = False
        self.shown = name
        log = self.log_view
        log.display = True
        if had_focus:
            log.focus()
        if self.board is not None:
            self.show_board(self.board)
        stacks = self.query_one(StacksView)
        taken = self._stacks.get(name)
        if taken is not None:
            stacks.show(taken, self.session.named)
        else:
            stacks.clear()

    def _show_stacks(self, taken: StacksTaken) -> None:
        self._stacks[taken.node] = taken
        if taken.node == self.shown:
            self.query_one(StacksView).show(taken, self.session.named)
        if taken.saved:
            self.notify(f"stacks saved: {taken.saved}", timeout=4)

    def action_stacks(self) -> None:
        """Dump every process of the shown node's server now (py-spy, on a worker thread); the panel shows it."""
        if self.typing():
            return
        why = self.board.can("stacks") if self.board is not None else None
        if why is not None:
            self.notify(why, severity="warning")
            return
        whose = f"{self.shown}'s" if self.session.named else "the server's"
        self.notify(f"reading the stacks of {whose} processes…", timeout=2)
        self.send_intent(RequestStacks(self.shown))

    @work(thread=True, group="intents")
    def send_intent(self, intent: Intent[object]) -> None:
        """An intent whose answer comes back as a message of the Session's (a dump), on a worker thread."""
        try:
            self.session.ask(intent)
        except UserError as exc:
            self.post_message(IntentRefused(str(exc)))

    def on_intent_refused(self, message: IntentRefused) -> None:
        self.notify(visible(message.text), severity="warning", timeout=8)

    # ---- intents ---------------------------------------------------------------------------

    def typing(self) -> bool:
        """A text box has the focus, or was asked for and is about to get it: keys are text, not commands."""
        return isinstance(self.focused, Input) or self._opened_lately()

    def _opened_lately(self) -> bool:
        """The log pane's text box was asked for less than OPENING ago (and has not closed since)."""
        return self._opening is not None and self.clock() - self._opening < OPENING

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Dashboard keys are inactive while a modal is open (the modal has its own) and while the user types."""
        if action == "next_node" and not self.session.named:
            return False  # not in the footer: one server, one log
        if action in KEYS and action != "quit" and isinstance(self.screen, ModalScreen):
            return False
        return not (action in KEYS and self.typing())

    def on_key(self, event: events.Key) -> None:
        """From a key that opens the log pane's text box (its action runs a moment later, and the box gets the
        focus later still), the keys typed after it are the box's text: they are kept and put into the box
        once it has the focus, as if typed there (check_action refuses them their actions meanwhile). A key
        that reaches the app here was on its way before the box took the focus (later ones go to the box)."""
        if event.key in PROMPT_KEYS and not isinstance(self.screen, ModalScreen) and not self.typing():
            self._opening = self.clock()
            self._typed = ""
        elif event.is_printable and event.character and self._opened_lately():
            event.stop()
            event.prevent_default()
            self._typed += event.character
            search = self.log_view.query_one(LogSearch)
            if search.has_focus:
                self._type_into(search)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The text box took the focus: the keys typed ahead go in now."""
        if isinstance(event.widget, LogSearch):
            self._type_into(event.widget)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        """The text box closed (Escape, Enter): keys are the dashboard's again."""
        if isinstance(event.widget, LogSearch):
            self._opening, self._typed = None, ""

    def _type_into(self, box: LogSearch) -> None:
        """The keys typed ahead into ``box``, as a paste: it comes after the box's own focus handling (which
        selects the old text: typed keys replace it, as typed ones do)."""
        if self._typed:
            box.post_message(events.Paste(self._typed))
            self._typed = ""

    def action_log(self, name: str) -> None:
        log = self.log_view
        getattr(log, f"action_{name}")()

    def action_patch(self) -> None:
        """p: the fix for the shown diagnosis: a profile change (flag/env, or back to what worked: the flags and
        variables it names as the last READY launch had them) shown as a TOML diff and applied on confirm,
        then the relaunch; otherwise the SM120 patch modal."""
        if self.typing():  # its key was allowed a moment before a search box took the keyboard
            return
        if self.board is not None and self.board.can("fix") is None:
            self.plan_fix(self.shown)
        else:
            self._patch_modal()

    def _patch_modal(self) -> None:
        why = self.board.can("patch") if self.board is not None else None
        if why is not None:
            self.notify(why, severity="warning")
            return
        self.push_screen(PatchScreen(self.session), self._patch_closed)

    @work(thread=True, exclusive=True, group="fix")
    def plan_fix(self, node: str) -> None:
        """Read the profile and make the change the diagnosis asks for (a file read: never on the UI loop)."""
        try:
            self.post_message(FixPlanned(self.session.ask(PlanFix(node))))
        except UserError as exc:
            self.post_message(FixPlanned(None, str(exc)))

    def on_fix_planned(self, message: FixPlanned) -> None:
        fix = message.fix
        if message.error is not None:
            self.notify(visible(message.error), severity="warning", timeout=8)
        elif fix is None:
            self._patch_modal()
        elif not fix.changed:
            self.notify(f"{fix.path.name} already has this change: press r to relaunch")
        else:
            view = self.board.view(self.shown) if self.board is not None else None
            saids = (*((view.cause,) if view.cause is not None else ()), *view.errors, *view.warnings) if view else ()
            diag = next((d for d in saids if d.cause is not None and d.fix == fix.action), None)
            said = f"{visible(diag.cause or '')}\n\nnext: {visible(diag.action or '')}\n\n" if diag is not None else ""
            said = f"{visible(fix.note)}\n\n" if fix.note else said  # back to what worked says what it restores
            diff = "\n".join(visible(line) for line in fix.diff.splitlines())
            self.push_screen(ConfirmScreen(fix.title, Content(said + diff), yes="Apply"),
                             partial(self._fix_confirmed, fix))

    def _fix_confirmed(self, fix: ProfileFix, yes: bool | None) -> None:
        if yes:
            self.apply_fix(fix)

    @work(thread=True, exclusive=True, group="fix")
    def apply_fix(self, fix: ProfileFix) -> None:
        """Write the profile change (atomically); the Session launches with it from now on."""
        try:
            self.session.ask(ApplyFix(fix))
        except UserError as exc:
            self.post_message(FixApplied(fix, str(exc)))
            return
        self.post_message(FixApplied(fix))

    def on_fix_applied(self, message: FixApplied) -> None:
        if message.error is not None:
            self.notify(visible(message.error), severity="error", timeout=8)
            return
        fix = message.fix
        self.notify(f"{fix.path.name} updated ({fix.summary})")
        self.action_relaunch()

    def _patch_closed(self, relaunch: bool | None) -> None:
        """The patch modal closed; with r pressed there, ask to relaunch (the README's p, y, r, y)."""
        if relaunch:
            self.action_relaunch()

    @_while_composed
    def on_patch_changed(self, message: PatchChanged) -> None:
        if message.error:
            self.notify(message.text, severity="error", timeout=8)
            return
        self.notify(message.text)  # the Session posts the verdict with its new advice

    def action_relaunch(self) -> None:
        if self.typing():  # its key was allowed a moment before a search box took the keyboard
            return
        if self.relaunching:
            self.notify("a relaunch is already in progress")
            return
        plan = self.board.relaunch if self.board is not None else None
        if plan is None:
            why = (self.board.can("relaunch") if self.board is not None else None) or "the server is not known yet"
            self.notify(why, severity="warning", timeout=8)
            return
        named = self.session.named
        launches = "\n".join(f"  {node}: {command}" if named else f"  {command}" for node, command in plan.commands)
        body = (f"Stop the running server (SIGTERM, then SIGKILL after {plan.grace:.0f} s), wait for its GPU memory "
                f"and port to be released, then launch again:\n\n{launches}")
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

        try:
            result = self.session.ask(Launch(progress))
        except (UserError, OSError) as exc:  # an OSError the launcher did not word: shown, not a crash
            self.post_message(RelaunchDone(str(exc), ""))
            return
        named = self.session.named
        done = ", ".join(f"{node} pid {rec.pid}" if named else f"pid {rec.pid}" for node, rec in result.records)
        note = "; ".join(result.warnings)
        self.post_message(RelaunchDone(None, f"launched {done}" + (f" ({note})" if note else "")))

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
        if self.session.named:
            yield SystemCommand("Next node", "Show the next node's log, diagnosis and stacks (o)",
                                self.action_next_node)
        for name in self.theme_names:
            yield SystemCommand(f"Theme: {name}", f"Switch to the {name} theme",
                                partial(self.action_set_theme, name))
        if self.screen.query(".log-pane"):
            yield from self.log_view.commands()


def app_css_path() -> Path:
    """Where app.tcss lives (next to this module)."""
    return Path(__file__).with_name("app.tcss")
