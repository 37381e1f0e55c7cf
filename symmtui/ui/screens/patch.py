"""The SM120 patch modal: the check result and the exact diff; y applies (or reverts once applied), r relaunches."""

from __future__ import annotations

from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from symmtui.errors import UserError
from symmtui.session.intents import ApplyPatch, CheckPatch, RevertPatch
from symmtui.session.patching import PatchView
from symmtui.session.protocol import SessionLike
from symmtui.ui.screens.confirm import Guard


def render_diff(diff: str) -> Content:
    """A unified diff coloured by line kind from theme variables."""
    if not diff:
        return Content.styled("(no changes to write)", "$muted")
    lines: list[Content] = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            lines.append(Content.styled(line, "bold"))
        elif line.startswith("@@"):
            lines.append(Content.styled(line, "$log-phase"))
        elif line.startswith("+"):
            lines.append(Content.styled(line, "$log-ready"))
        elif line.startswith("-"):
            lines.append(Content.styled(line, "$log-crash"))
        else:
            lines.append(Content(line))
    return Content("\n").join(lines)


def render_report(view: PatchView) -> Content:
    """The check result: package, release, per-table status, prediction, caveats."""
    rep = view.report
    parts: list[Content] = [
        Content.assemble(
            ("package ", "$muted"), (f"{rep.package} {rep.version or '?'}", "bold"), ("  at ", "$muted"), str(rep.root)
        ),
        Content.assemble(("capability ", "$muted"), (str(view.capability), "bold"),
                         ("   layout ", "$muted"), rep.layout),
    ]
    for table in rep.tables:
        mark, style = ("✔ has", "$success") if table.has_key else ("✖ lacks", "$error")
        parts.append(
            Content.assemble("  ", (mark, style), f" key in {table.name} ", (f"({table.relpath}:{table.line})", "$muted"))
        )
    state_style = {"needed": "bold $warning", "applied": "bold $success", "present": "bold $success"}.get(
        rep.state, "bold $error"
    )
    parts.append(Content.assemble(("→ ", state_style), (rep.summary, state_style)))
    if rep.detail:
        parts.append(Content.styled(rep.detail, "$muted"))
    if rep.write_problem:
        parts.append(Content.styled("✖ " + rep.write_problem, "$error"))
    for caveat in rep.caveats:
        parts.append(Content.assemble(("note: ", "$accent"), (caveat, "$muted")))
    return Content("\n").join(parts)


class PatchScreen(ModalScreen[bool]):
    """Check (in a thread), show report and diff, apply or revert on y/Enter; n/Escape closes; r closes
    and asks the app to relaunch (the result is True then)."""

    BINDINGS = [
        Binding("y,enter", "confirm", "Confirm", priority=True),
        Binding("n,escape", "close", "Close", priority=True),
        Binding("r", "relaunch", "Relaunch", priority=True),
        # priority: a long site path makes the report above the diff scrollable, and focusable, and then it
        # took these keys; they always scroll the diff
        Binding("down,j", "scroll_diff(1)", "Scroll diff", show=False, priority=True),
        Binding("up,k", "scroll_diff(-1)", "Scroll diff", show=False, priority=True),
        Binding("pagedown,space", "scroll_diff(10)", "Page down", show=False, priority=True),
        Binding("pageup", "scroll_diff(-10)", "Page up", show=False, priority=True),
    ]

    @dataclass
    class Checked(Message):
        view: PatchView | None
        error: str | None

    @dataclass
    class Done(Message):
        text: str
        error: bool
        applied: bool

    def __init__(self, session: SessionLike) -> None:
        super().__init__(classes="dialog-screen")
        self.session = session
        self.view: PatchView | None = None
        self.busy = True
        self.result: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="patch-dialog") as box:
            box.border_title = "SM120 patch"
            # The scroll boxes take no focus: the buttons keep it, and the arrow / page keys always
            # scroll the diff (a focused report box would take pagedown for itself).
            with VerticalScroll(id="patch-report-scroll", can_focus=False):
                yield Static(Content.styled("checking the installed tables…", "$muted"), id="patch-report")
            with VerticalScroll(id="patch-diff-scroll", can_focus=False):
                yield Static("", id="patch-diff")
            yield Static("", id="patch-result")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply (y)", id="patch-go", variant="primary", disabled=True, compact=True)
                yield Button("Close (n)", id="patch-close", compact=True)

    def on_mount(self) -> None:
        self.guard = Guard(self.app)
        self.run_check()

    @work(thread=True, exclusive=True, group="patch-check")
    def run_check(self) -> None:
        try:
            view = self.session.ask(CheckPatch())
        except (UserError, OSError) as exc:
            self.post_message(self.Checked(None, str(exc)))
            return
        self.post_message(self.Checked(view, None))

    def on_patch_screen_checked(self, message: Checked) -> None:
        self.busy = False
        self.view = message.view
        report = self.query_one("#patch-report", Static)
        go = self.query_one("#patch-go", Button)
        if message.view is None:
            report.update(Content.styled("✖ " + (message.error or "check failed"), "bold $error"))
            self.query_one("#patch-diff-scroll").display = False  # no diff to show: no empty box
            go.label = "Nothing to do"
            go.disabled = True
            return
        view = message.view
        report.update(render_report(view))
        if self.result is not None:  # the re-check after a change: show the new state, y/Enter closes
            self.query_one("#patch-diff-scroll").display = False
            self.query_one("#patch-close", Button).display = False
            go.label = "Close (y)"
            go.disabled = False
            return
        self.query_one("#patch-diff", Static).update(
            render_diff(view.diff) if view.can_apply else Content.styled(view.diff_note, "$muted")
        )
        self.query_one("#patch-diff-scroll").display = bool(view.diff) or not view.can_apply
        if view.can_apply:
            go.label = "Apply (y)"
            go.disabled = False
        elif view.can_revert:
            go.label = "Revert (y)"
            go.disabled = False
        else:
            go.label = "Nothing to do"
            go.disabled = True

    def action_confirm(self) -> None:
        if self.result is not None:  # done (the re-check may still be running): y/Enter closes
            self.dismiss(False)
            return
        view = self.view
        if self.busy or view is None:
            return
        if not self.guard.accepting:  # typed ahead: the apply waits for a key meant for it
            self.app.bell()
            return
        if not (view.can_apply or view.can_revert):
            self.dismiss(False)
            return
        self.busy = True
        self.query_one("#patch-go", Button).disabled = True
        what = "applying" if view.can_apply else "reverting"
        self.query_one("#patch-result", Static).update(Content.styled(f"{what}…", "$accent"))
        self.run_change(view)

    @work(thread=True, exclusive=True, group="patch-change")
    def run_change(self, view: PatchView) -> None:
        try:
            state = self.session.ask(ApplyPatch(view) if view.can_apply else RevertPatch())
        except (UserError, OSError) as exc:  # e.g. disk full, read-only: shown in the modal, not a crash
            self.post_message(self.Done(str(exc), True, False))
            return
        self.post_message(self.Done(state.text, False, state.applied))

    def on_patch_screen_done(self, message: Done) -> None:
        style = "bold $error" if message.error else "bold $success"
        icon = "✖ " if message.error else "✔ "
        hint = "" if message.error else "   (r relaunches; Enter closes)"
        self.query_one("#patch-result", Static).update(
            Content.assemble((icon + message.text, style), (hint, "$muted"))
        )
        if message.error:
            self.busy = False
            self.query_one("#patch-go", Button).disabled = False
        else:
            # Check again so the modal shows the tables as they are now, not the pre-change report.
            self.result = message.text
            self.run_check()
        self.app.post_message(PatchChanged(message.text, message.error, message.applied))

    def action_close(self) -> None:
        self.dismiss(False)

    def action_relaunch(self) -> None:
        """Close and relaunch (after the apply, as the hint says); ignored while a change is running."""
        if self.busy and self.result is None and self.view is not None:
            self.app.bell()
            return
        self.dismiss(True)

    def action_scroll_diff(self, lines: int) -> None:
        """Scroll the diff from the keyboard (the buttons keep the focus)."""
        scroll = self.query_one("#patch-diff-scroll", VerticalScroll)
        scroll.scroll_relative(y=lines, animate=False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "patch-go":
            self.action_confirm()
        else:
            self.action_close()


@dataclass
class PatchChanged(Message):
    """The patch was applied or reverted (or failed): the app updates the diagnosis and toasts.

    ``applied``: whether the patch is in place now (data, never read from ``text``).
    """

    text: str
    error: bool
    applied: bool
