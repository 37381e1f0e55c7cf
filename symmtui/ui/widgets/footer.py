"""The dashboard's footer: Textual's own Footer; in a narrow terminal (``compact``, under 110 columns) only the
keys of ``narrow_keys`` (the most important ones, the help key among them: it lists the rest); wide, every key.

Public API only: the keys are those the stock ``compose`` yields, each read by its ``key``; switching
``compact`` recomposes (``Widget.recompose``), with the palette key as ``show_command_palette`` says then.
When the focus moves and the keys shown stay the same, or the search box takes the keys (they are its text:
they stay, dimmed), the keys are dimmed in place instead of recomposed: a recompose lays the whole screen out
again (tens of ms), and a key typed during a flood of log lines waited for it.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input


class DashboardFooter(Footer):
    """A Footer that, when compact, shows only ``narrow_keys`` (and the command palette's key)."""

    def __init__(self, *, id: str | None = None, narrow_keys: frozenset[str] = frozenset()) -> None:
        super().__init__(id=id)
        self.narrow_keys = narrow_keys
        """The keys shown when compact (empty: all of them)."""
        self._shown: tuple[tuple[str, str, str], ...] | None = None  # the keys last composed

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Recompose only when the keys shown change; when only whether they act now does, dim them in place.
        While a text box has the focus (the keys are its text), the keys stay, dimmed."""
        if isinstance(self.app.focused, Input) and self._shown is not None and screen is self.screen:
            for widget in self.query("FooterKey"):
                if isinstance(getattr(widget, "key", None), str):
                    widget.set_class(True, "-disabled")
            return
        active = screen.active_bindings.values()
        shown = tuple((b.key, b.action, b.description) for _node, b, _enabled, _tip in active if b.show)
        if shown == self._shown and self.is_attached and screen is self.screen:
            enabled = {b.key: on for _node, b, on, _tip in active if b.show}
            for widget in self.query("FooterKey"):
                key = getattr(widget, "key", None)
                if isinstance(key, str) and key in enabled:
                    widget.set_class(not enabled[key], "-disabled")
            return
        self._shown = shown
        super().bindings_changed(screen)

    def watch_compact(self, compact: bool) -> None:
        """Narrow or wide: the keys shown change with it."""
        self._shown = None
        if self.is_attached:
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        only = self.narrow_keys if self.compact else frozenset()
        for widget in super().compose():
            if only and not self._kept(widget, only):
                continue
            # Each bound key is made compact, then bound to ours: two restyles each (~0.4 ms). Ours from the start:
            # none (the binding finds it equal). The palette's key is not bound: it keeps its own.
            compact = getattr(type(widget), "compact", None)
            if isinstance(compact, Reactive) and not widget.has_class("-command-palette"):
                widget.set_reactive(compact, self.compact)
            yield widget

    def _kept(self, widget: Widget, only: frozenset[str]) -> bool:
        key = getattr(widget, "key", None)  # a key of the footer (a label of a group has none)
        return not isinstance(key, str) or key in only or key == self.app.COMMAND_PALETTE_BINDING
