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
from textual.actions import parse
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Button, Footer, Input

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.judge.board import Board, Said
from symmtui.judge.readiness import State
from symmtui.judge.verdict import PATCHED_ACTION
from symmtui.launch.profilefix import ProfileFix
from symmtui.paths import user_state_dir
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
from symmtui.ui.screens.help import HelpRow, HelpScreen, Section, help_rows
from symmtui.ui.screens.patch import PatchChanged, PatchScreen
from symmtui.ui.screens.plots import PlotsScreen
from symmtui.ui.screens.processes import ProcessScreen
from symmtui.ui.screens.relaunch import RelaunchScreen
from symmtui.ui.themes import DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes, register_themes
from symmtui.ui.widgets.diagnosis import DiagnosisView
from symmtui.ui.widgets.footer import DashboardFooter
from symmtui.ui.widgets.gauge import Activity, ReadinessGauge
from symmtui.ui.widgets.gpu_panel import GpuPanel, GpuTable
from symmtui.ui.widgets.header import StatusHeader
from symmtui.ui.widgets.log_view import LogLines, LogSearch, LogView
from symmtui.ui.widgets.plots import phase_marks
from symmtui.ui.widgets.stacks import StacksView
from symmtui.ui.widgets.topology import TopologyView

PROFILE_FIXES = frozenset({"flag_add", "flag_remove", "env"})
"""The catalogue's action types p writes into the profile (launch.profilefix); the others are one line."""
RELAUNCH_LINGER = 1.5  # seconds the relaunch steps stay on screen after the new server started
OPENING = 1.0  # seconds a search box may take to get the focus; keys typed meanwhile go into it
KEYS = frozenset({"patch", "relaunch", "log", "next_theme", "stacks", "next_node", "processes", "plots", "help",
                  "quit", "switch_focus", "focus_log"})
"""The dashboard's own keys: none acts while a text box has the focus or is opening (ctrl+c always quits)."""
PROMPT_KEYS = frozenset({"slash", "question_mark", "i", "x", "colon"})
"""The keys that open the log pane's text box (search, filter in/out, command: log_view.LogSearch)."""


def _routed(bindings: Iterable[BindingType], *, show: bool = False, letters: bool = False) -> list[Binding]:
    """The log pane's bindings as the app's (``log('action')``: the pane shown), so they work wherever the
    focus is; ``letters``: only the keys a focused table does not take itself (j / k stay the table's)."""
    out: list[Binding] = []
    for b in bindings:
        if not isinstance(b, Binding) or b.action == "close_search":
            continue
        keys = [k for k in b.key.split(",") if not letters or (len(k) == 1 and k not in "jk") or k.startswith("ctrl+")]
        if keys:
            target = "lines" if letters else "view"
            out.append(Binding(",".join(keys), f"log({b.action!r}, {target!r})", b.description, show=show and b.show,
                               key_display=b.key_display, tooltip=b.tooltip))
    return out


F = TypeVar("F", bound=Callable[..., None])
W = TypeVar("W", bound=Widget)


def _calls_for_patch(said: Said) -> bool:
    """Whether the diagnosis calls for the SM120 patch (or is the patch's, applied: p reverts it)."""
    return said.intent == "patch" or said.action == PATCHED_ACTION or (said.fix is not None and said.fix.type == "patch")


def _unfocusable(widget: W) -> W:
    """``widget`` out of the focus chain: a key typed by mistake (Tab) never takes the keys off the log pane."""
    widget.can_focus = False
    return widget


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


def end_job_control() -> None:
    """Give SIGCONT and SIGTSTP back to their defaults: Textual's driver sets them when it is made and leaves
    them behind. A SIGCONT after the driver left application mode (tmux sends one with the SIGHUP of a closed
    pane) ran its resume, which started a new, non-daemon input thread that nothing stops: the process hung at
    its exit, and on the closed terminal that thread's select loop spun a core (a dashboard found 21 minutes
    after its test, 100 % of a core, its main thread in threading._shutdown). Also: a SIGCONT after the app
    ended ran the resume on no event loop, in the middle of the demo's clean-up (its temp dir was left)."""
    for sig in (signal.SIGCONT, signal.SIGTSTP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread: nothing was installed
            signal.signal(sig, signal.SIG_DFL)


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
        Binding("p", "patch", "Patch", tooltip="The fix the diagnosis calls for: the SM120 patch or a profile change"),
        Binding("r", "relaunch", "Relaunch", tooltip="Stop the server, wait for GPU memory and port, launch again"),
        *_routed(LogView.BINDINGS, show=True),  # the log pane's keys, wherever the focus is
        Binding("s", "stacks", "Stacks", tooltip="Dump every process of the server now (py-spy)"),
        Binding("P", "processes", "Procs", key_display="P", show=False,
                tooltip="The processes on the GPUs; k / K signal one"),
        Binding("v", "plots", "Plots", show=False, tooltip="GPU memory and utilisation, the last 10 minutes"),
        Binding("o", "next_node", "Node"),  # a server of several nodes only: whose log, diagnosis and stacks
        Binding("q", "quit", "Quit", tooltip="Quit (the servers keep running)"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, tooltip="Quit, as lnav and toolong do"),
        Binding("f1,h", "help", "Keys", key_display="F1", tooltip="Every key and what it does now (also h)"),
        Binding("t", "next_theme", "Theme", tooltip="The next theme"),  # last: 80 columns cut it, not q or F1
        # priority: Textual's Screen binds tab / shift+tab to focus_next / focus_previous, and a screen's binding
        # is found before the app's; that walk reaches every focusable widget (the search box, open while a
        # search is on). check_action refuses this on a modal and while typing: their own focus keys then work
        Binding("tab,shift+tab", "switch_focus", "Focus", show=False, priority=True,
                tooltip="The log pane or the GPU table (its up / down list a GPU's processes); Escape: the log"),
        Binding("escape", "focus_log", "Log", show=False, tooltip="Back to the log pane"),
        *_routed(LogLines.BINDINGS, letters=True),  # j, k, g, G ... reach the pane from the GPU table too
    ]
    NARROW_KEYS = frozenset({"p", "r", "f", "slash", "e", "n", "s", "q", "f1"})
    """The keys the footer shows under 110 columns; F1 lists the rest."""

    def __init__(self, session: SessionLike, *, theme: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.session = session
        self.clock = clock
        """The app's clock (monotonic seconds): the widgets and the typing guard read time only through it."""
        self.shown: str = session.nodes[0]
        """The node whose log, diagnosis and stacks the dashboard shows (o cycles)."""
        self.node_chosen = False  # the user pressed o: the verdict no longer moves the pane
        self._moved_for: tuple[State, str] | None = None  # the verdict the pane last moved for
        self._stacks: dict[str, tuple[StacksTaken, State | None]] = {}  # each node's last dump, the state then
        self._log_paths: dict[str, str | None] = {}
        self.theme_names = register_themes(self, load_themes())
        self._start_theme(theme or DEFAULT_THEME)
        self.relaunching = False
        self._opening: float | None = None  # when a text box was asked for (it gets the focus a moment later)
        self._typed = ""  # the keys typed since, for the box once it has the focus
        self._last_key: events.Key | None = None  # the last key that held the engine back (boundary.give_way)
        self.board: Board | None = None
        """The Board shown (the Session posts one with every batch and once a second)."""
        self._mailbox: Mailbox | None = None

    # ---- layout ----------------------------------------------------------------------------

    def _start_theme(self, name: str) -> None:
        """Start in theme ``name``. Setting ``App.theme`` before the app runs re-parses all of its CSS once more
        (Textual's watcher queues a refresh_css: 15-45 ms of the first paint) only to swap the variables of the
        stylesheet the app has not parsed yet; set them instead. A theme light where Textual's default is dark
        also needs the watcher's ANSI colour mapping: that one is set as usual."""
        chosen = self.get_theme(name)
        if chosen is None or chosen.dark != self.current_theme.dark:
            self.theme = name  # validated: an unknown name raises as it always did
            return
        self.set_reactive(App.theme, name)
        self.stylesheet.set_variables(self.get_css_variables())
        self.set_class(True, f"-theme-{name}", update=False)

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
                    # the keys p and r do what they do; a click works; the keyboard's focus stays on the log
                    yield _unfocusable(Button("Apply SM120 patch (p)", id="btn-patch", variant="warning", compact=True))
                    yield _unfocusable(Button("Relaunch (r)", id="btn-relaunch", variant="primary", compact=True))
                yield _unfocusable(TopologyView(id="topology"))
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
        self.call_after_refresh(boundary.started)  # the collector resumes (cli.console stopped it for the start)
        for box in self.query(LogSearch):  # each node's pane
            box.typed_ahead = self._take_typed
        self.log_view.focus()

    def _exit_on_signals(self) -> None:
        """SIGTERM ends the app cleanly (the caller's cleanup runs: the demo stops its servers).
        SIGHUP means the terminal is gone (tmux pane or SSH session closed): clean up at once and
        leave without restoring a terminal that no longer exists (Textual can block writing to it)."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, self.exit, 128 + signal.SIGTERM)
            loop.add_signal_handler(signal.SIGHUP, self._hangup)
        came = boundary.app_has_signals()  # one that came while Textual started (entry.run_app held it): now
        if came == signal.SIGHUP:
            self._hangup()
        elif came == signal.SIGTERM:
            self.exit(128 + signal.SIGTERM)

    def on_unmount(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop = asyncio.get_running_loop()
            loop.remove_signal_handler(signal.SIGTERM)
            loop.remove_signal_handler(signal.SIGHUP)
        end_job_control()  # now, before Textual's driver leaves application mode
        boundary.hold_signals()  # asyncio left them at their default: the clean-up after this must not be cut
        boundary.key_shown()  # a key's frame that never came (the key quit): the engine reads on at full speed

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
        """One engine batch: the pane views the batch's file itself (no log text comes through here), marks
        rows from its events and looks at the file now; the verdict is rendered."""
        node = batch.node
        log = self._log_of(node)
        if batch.restarted or batch.log_path != self._log_paths.get(node):
            log.view_file(batch.log_path, fresh=batch.restarted)
            self._log_paths[node] = batch.log_path
            if batch.restarted and self._stacks.pop(node, None) is not None and node == self.shown:
                self.query_one(StacksView).clear()  # the dump was of the launch before
        for notice in batch.notices:
            log.notice(notice.kind)
            if notice.kind == "attached":
                continue  # "the part before is not judged": the engine's; the pane shows and judges all of it
            # the follower's "following PATH" would read as "following" next to a paused pane
            log.border_subtitle = f"file {notice.path}" if notice.kind == "opened" else notice.message
            text = f"{node}: {notice.message}" if self.session.named else notice.message
            if notice.kind == "error":
                self.notify(text, severity="error")
            elif notice.kind == "exited":  # a log command ended (container restarted, ssh dropped)
                self.notify(text, severity="warning")
        if batch.events:
            log.add_events(batch.events)
        log.poke()
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
        kind, _said = self._fix()
        button = self.query_one("#btn-patch", Button)
        button.display = kind is not None  # p's button says what p does, and is there only when it does something
        label = "Apply SM120 patch (p)" if kind == "patch" else "Apply the fix (p)"
        if str(button.label) != label:
            button.label = label

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
        """v: every GPU's memory and utilisation over the last 10 minutes, the phases marked."""
        self.push_screen(PlotsScreen(self.query_one(GpuPanel).history, self._phase_marks()))

    def action_help(self) -> None:
        """F1 / h: every key and what it does now, generated from the bindings."""
        rows = self.help_rows()
        if self.is_screen_installed("help"):  # one help screen, kept: each open only redraws its text
            help_screen = self.get_screen("help")
            assert isinstance(help_screen, HelpScreen)
            help_screen.show(rows)
        else:
            self.install_screen(HelpScreen(rows), name="help")
        self.push_screen("help")

    def help_rows(self) -> list[HelpRow]:
        """Every key the dashboard has, by section (the help screen's rows; a test types each)."""
        pane = "the log pane"
        sections: list[Section] = [
            ("dashboard", [b for b in self.BINDINGS if isinstance(b, Binding) and not b.action.startswith("log(")]),
            (pane, [*LogView.BINDINGS, *LogLines.BINDINGS]),
            ("the search box", LogSearch.BINDINGS),
            ("the GPU table (Tab)", GpuTable.BINDINGS),
        ]
        extra = [
            HelpRow(pane, "N g, N G", "go to line N (digits, then g: 120g, as in less)", None, ("1", "2", "g")),
            HelpRow("the search box", "enter", "search: the first match, then n / N walk them; a filter or a "
                    "command: apply it", None, ("enter",)),
            HelpRow("dialogs", "y, n", "in a dialog: y or Enter answers yes, n or Escape no", None, ("y", "n")),
        ]

        def enabled(action: str) -> bool | None:
            if action.startswith(("log(", "line(", "page(", "half(", "sideways(")) or action not in self._actions():
                return True
            return self.check_action(action, ())

        return help_rows(self, sections, note=self.key_note, enabled=enabled, extra=extra)

    def _actions(self) -> set[str]:
        return {b.action for b in self.BINDINGS if isinstance(b, Binding)}

    def key_note(self, action: str) -> str | None:
        """Why a key does nothing now (the help screen says it), or None."""
        if action == "relaunch":
            return self.board.can("relaunch") if self.board is not None else None
        if (action in ("next", "previous") or action.startswith(("log('next'", "log('previous'"))) \
                and self.log_view.search_text:  # the pane's own n / N are the rows listed
            return f"a search is on: the matches of /{self.log_view.search_text}/"
        return None

    def action_export(self) -> None:
        """Write the lines the log pane shows (filters applied) to the state directory."""
        name = Path(self._log_paths.get(self.shown) or "log").name
        path = user_state_dir("exports") / f"{name}.{time.strftime('%Y%m%d-%H%M%S')}.txt"  # outlives the demo
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
        kept = self._stacks.get(name)
        if kept is not None:
            stacks.show(kept[0], self.session.named, kept[1])
        else:
            stacks.clear()

    def _show_stacks(self, taken: StacksTaken) -> None:
        state = self.board.view(taken.node).state if self.board is not None else None
        self._stacks[taken.node] = (taken, state)
        if taken.node == self.shown:
            self.query_one(StacksView).show(taken, self.session.named, state)
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

    async def on_event(self, event: events.Event) -> None:
        """A key holds the engine's reading back until the frame that shows its effect is drawn (``boundary.
        give_way``): the frame after the one in progress, where the key's action and any screen it opens are."""
        if isinstance(event, events.Key) and event is not self._last_key:  # (a key bubbled back up comes again)
            self._last_key = event
            boundary.key_typed()
            self.call_after_refresh(self.call_after_refresh, boundary.key_shown)
        await super().on_event(event)

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
            if search.has_focus:  # it took the focus (and the keys typed before) while this key was on its way
                search.insert_text_at_cursor(self._take_typed())

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        """The text box closed (Escape, Enter): keys are the dashboard's again."""
        if isinstance(event.widget, LogSearch):
            self._opening, self._typed = None, ""

    def _take_typed(self) -> str:
        """The keys typed ahead for the log pane's text box, handed over once (``LogSearch.typed_ahead``)."""
        typed, self._typed = self._typed, ""
        return typed

    def action_log(self, action: str, target: str = "view") -> None:
        """A log pane key: ``action`` of the pane shown (``target`` "lines": of its scrolling body)."""
        log = self.log_view
        _namespace, name, args = parse(action)
        getattr(log.lines if target == "lines" else log, f"action_{name}")(*args)

    def action_switch_focus(self) -> None:
        """Tab: the keys go to the GPU table (up / down list a GPU's processes), or back to the log pane."""
        table = self.query_one(GpuTable)
        if table.has_focus:
            self.log_view.focus()
        else:
            table.focus()

    def action_focus_log(self) -> None:
        """Escape (outside the log pane): the keys go back to the log pane."""
        self.log_view.focus()

    def action_patch(self) -> None:
        """p: the fix the shown diagnosis calls for: the SM120 patch modal where it calls for the patch (or the
        patch is applied: the modal reverts it); a profile change (a flag or variable the diagnosis names, or
        back to what worked: the flags and variables of the last READY launch) shown as a TOML diff and applied
        on confirm, then the relaunch; else one line that says there is none."""
        if self.typing():  # its key was allowed a moment before a search box took the keyboard
            return
        kind, said = self._fix()
        if kind == "patch":
            self._patch_modal()
        elif kind == "profile":
            self.plan_fix(self.shown)
        elif said is None:
            self.notify("p: nothing to fix (no crash or warning the catalogue has a fix for)", timeout=4)
        else:
            self.notify(f"p: no fix to apply for this ({visible(said.action or said.headline)})", timeout=8)

    def _fix(self) -> tuple[str | None, Said | None]:
        """What p does for the shown node, with the diagnosis it acts on: ("profile", said) where the diagnosis
        has a fix and there is a profile to write, and the fix is a flag or variable or back to what worked may
        have one (the flags and variables of the last READY launch); ("patch", said) where it calls for the SM120
        patch (or the patch is applied); else (None, the first diagnosis or None)."""
        board = self.board
        if board is None:
            return None, None
        shown = board.view(self.shown).shown
        said = next((d for d in shown if d.fix is not None or d.intent == "patch" or d.action == PATCHED_ACTION),
                    shown[0] if shown else None)
        if said is None:
            return None, None
        changed = board.changes is not None and bool(board.changes.lines) and self.shown == board.node
        if said.fix is not None and board.can("fix") is None and (said.fix.type in PROFILE_FIXES or changed):
            return "profile", said
        if _calls_for_patch(said):
            return "patch", said
        return None, said

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
        elif fix is None:  # no change to the profile after all: the patch where the diagnosis calls for it
            _kind, target = self._fix()
            if target is not None and _calls_for_patch(target):
                self._patch_modal()
            else:
                action = f" ({visible(target.action or target.headline)})" if target is not None else ""
                self.notify(f"p: no change to the profile to make for this{action}", timeout=8)
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
