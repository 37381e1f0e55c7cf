"""The help screen (? and F1): every key of the dashboard and what it does in the current state.

The rows come from the screen it opens over: its active bindings (the app's, and those of the widget with
focus and its parents: the log pane's, the GPU table's) with their tooltip or description; a key the app
disables now is marked with the app's reason where it has one (``note``: "relaunch needs a profile ..."),
else "not now"; and ``extra`` rows (the dialogs' keys). Escape, q, ? or F1 closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

__all__ = ["HelpRow", "HelpScreen", "help_rows"]


@dataclass(frozen=True)
class HelpRow:
    """One key: how it is typed, what it does, and why not now (None: it works now)."""

    section: str
    key: str
    what: str
    not_now: str | None = None


def help_rows(screen: Screen[object], *, note: Callable[[str], str | None] = lambda _action: None,
              extra: Iterable[HelpRow] = ()) -> list[HelpRow]:
    """The keys active on ``screen``, in its bindings' order (the app's last), then ``extra`` rows.

    ``note(action)``: the app's word on an action now ("no profile: attached to a log"), or None."""
    app = screen.app
    rows: list[HelpRow] = []
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if binding.action in seen or not (binding.show or binding.tooltip) or not binding.description:
            continue  # a widget's own plumbing (scroll keys) is no key to learn
        seen.add(binding.action)
        shown = app.get_key_display(binding)
        section = "dashboard" if active.node is app else _SECTIONS.get(type(active.node).__name__, "this panel")
        why = note(binding.action)
        if not active.enabled and why is None:
            why = "not now"
        rows.append(HelpRow(section, shown if key != "slash" else "/", binding.tooltip or binding.description, why))
    done = {r.key for r in rows}
    rows += [r for r in extra if r.key not in done]
    order = list(dict.fromkeys(["dashboard", *(r.section for r in rows)]))
    return sorted(rows, key=lambda r: order.index(r.section))


_SECTIONS = {"LogView": "the log pane", "LogLines": "the log pane", "GpuTable": "the GPU table",
             "LogSearch": "the search box"}


def _render(rows: list[HelpRow], width: int) -> Content:
    key_width = min(16, max((len(r.key) for r in rows), default=4) + 2)
    out: list[Content] = []
    section = None
    for row in rows:
        if row.section != section:
            section = row.section
            if out:
                out.append(Content(""))
            out.append(Content.styled(section, "bold $accent"))
        what = row.what
        if len(what) > 1 and what[0].isupper() and what[1].islower():  # "Show only" -> "show only"; "GPU" stays
            what = what[0].lower() + what[1:]
        key = row.key if len(row.key) < key_width else row.key + " "
        parts: list[Content | str | tuple[str, str]] = [(f"  {key:<{key_width}}", "bold"), what]
        if row.not_now:
            parts.append((f"  ({row.not_now})", "$muted"))
        out.append(Content.assemble(*parts))
    out += [Content(""), Content.styled("Every action is also in the command palette: ctrl+p. Escape closes.",
                                        "$muted")]
    return Content("\n").join(out)


class HelpScreen(ModalScreen[None]):
    """The keys and what they do now; scrolls when they do not fit."""

    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", priority=True)]

    def __init__(self, rows: list[HelpRow]) -> None:
        super().__init__(classes="dialog-screen")
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="help-dialog") as box:
            box.border_title = "Keys (? or F1)"
            with VerticalScroll(id="help-scroll"):
                yield Static(_render(self.rows, self.app.size.width), id="help-body")

    def text(self) -> str:
        """The help as plain text (tests, and what a screen reader gets)."""
        return _render(self.rows, self.app.size.width).plain

    def action_close(self) -> None:
        self.dismiss(None)
