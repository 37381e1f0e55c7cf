"""The help screen (F1): every key of the dashboard and what it does in the current state.

The rows are generated from the bindings themselves: every binding with a description of each source given
(the app's, the log pane's, its scrolling body's, the search box's, the GPU table's), all keys of one binding
on one row (``j, down``), with its tooltip (else its description); a key the app disables now is marked with
the app's reason where it has one (``note``: "relaunch needs a profile ..."), else "not now"; an action the app
does not offer at all now (``o`` with one node) is left out; then ``extra`` rows (the dialogs' keys). A key
bound twice in one section is listed once. Escape, q, F1 or h closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from msgspec import Struct
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["HelpRow", "HelpScreen", "Section", "help_rows"]


class HelpRow(Struct, frozen=True):
    """One key: how it is typed, what it does, and why not now (None: it works now)."""

    section: str
    key: str
    what: str
    not_now: str | None = None
    keys: tuple[str, ...] = ()
    """The keys as Textual names them (``question_mark``, ``ctrl+d``): what a test types."""


Section = tuple[str, Sequence[BindingType]]
"""A section's title and its bindings."""


def help_rows(app: App[Any], sections: Iterable[Section], *,
              note: Callable[[str], str | None] = lambda _action: None,
              enabled: Callable[[str], bool | None] = lambda _action: True,
              extra: Iterable[HelpRow] = ()) -> list[HelpRow]:
    """A row per binding with a description, section by section, then ``extra`` rows.

    ``enabled(action)``: True (works now), None (shown, but not now), False (not offered: left out);
    ``note(action)``: the app's word on an action now ("no profile: attached to a log"), or None."""
    rows: list[HelpRow] = []
    for section, bindings in sections:
        seen: set[str] = set()
        for b in bindings:
            if not isinstance(b, Binding) or not b.description:
                continue
            keys = tuple(k.strip() for k in b.key.split(",") if k.strip() not in seen)
            if not keys:
                continue
            state = enabled(b.action)
            if state is False:
                continue
            seen.update(keys)
            why = note(b.action)
            if state is None and why is None:
                why = "not now"
            shown = ", ".join(_display(app, b, k) for k in keys)
            rows.append(HelpRow(section, shown, b.tooltip or b.description, why, keys))
    done = {(r.section, r.key) for r in rows}
    rows += [r for r in extra if (r.section, r.key) not in done]
    order = list(dict.fromkeys(r.section for r in rows))
    return sorted(rows, key=lambda r: order.index(r.section))


def _display(app: App[Any], binding: Binding, key: str) -> str:
    if binding.key_display and len(binding.key.split(",")) == 1:
        return binding.key_display
    if key == "slash":
        return "/"
    if key[:1] == "f" and key[1:].isdigit():
        return key.upper()
    return app.get_key_display(Binding(key, binding.action, binding.description))


def _render(rows: list[HelpRow]) -> Content:
    key_width = min(18, max((len(r.key) for r in rows), default=4) + 2)
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

    BINDINGS = [Binding("escape,q,f1,h", "close", "Close", priority=True)]

    def __init__(self, rows: list[HelpRow]) -> None:
        super().__init__(classes="dialog-screen")
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="help-dialog") as box:
            box.border_title = "Keys (F1 or h)"
            with VerticalScroll(id="help-scroll"):
                yield Static(_render(self.rows), id="help-body")

    def show(self, rows: list[HelpRow]) -> None:
        """The keys as they are now, from the top (the app keeps this screen: a new one each time left its
        widgets' rendered lines to the collector, and during a flood opening it took over 100 ms)."""
        self.rows = rows
        if self.is_mounted:
            self.query_one("#help-body", Static).update(_render(rows))
            self.query_one("#help-scroll", VerticalScroll).scroll_home(animate=False)

    def text(self) -> str:
        """The help as plain text (tests, and what a screen reader gets)."""
        return _render(self.rows).plain

    def action_close(self) -> None:
        self.dismiss(None)
