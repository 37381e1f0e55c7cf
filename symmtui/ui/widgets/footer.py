"""The dashboard's footer: Textual's own Footer; in a narrow terminal (``compact``, under 110 columns) only the
keys of ``narrow_keys`` (the most important ones, the help key among them: it lists the rest); wide, every key.

Public API only: the keys are those the stock ``compose`` yields, each read by its ``key``; switching
``compact`` recomposes (``Widget.recompose``), with the palette key as ``show_command_palette`` says then.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer


class DashboardFooter(Footer):
    """A Footer that, when compact, shows only ``narrow_keys`` (and the command palette's key)."""

    def __init__(self, *, id: str | None = None, narrow_keys: frozenset[str] = frozenset()) -> None:
        super().__init__(id=id)
        self.narrow_keys = narrow_keys
        """The keys shown when compact (empty: all of them)."""

    def watch_compact(self, compact: bool) -> None:
        """Narrow or wide: the keys shown change with it."""
        if self.is_attached:
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        only = self.narrow_keys if self.compact else frozenset()
        for widget in super().compose():
            if only and not self._kept(widget, only):
                continue
            yield widget

    def _kept(self, widget: Widget, only: frozenset[str]) -> bool:
        key = getattr(widget, "key", None)  # a key of the footer (a label of a group has none)
        return not isinstance(key, str) or key in only or key == self.app.COMMAND_PALETTE_BINDING
