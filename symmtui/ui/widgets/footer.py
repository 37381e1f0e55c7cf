"""The dashboard's footer: Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer removes and mounts every key each time the screen's bindings are refreshed (focus
moves, a screen is pushed or popped, the app gains focus), once per refresh even when several come
in one frame, and each new key switches its ``-compact`` class twice (on by default, then off from
the footer's own value), a restyle each. This one coalesces the refreshes of a frame into one check,
skips the rebuild when the keys, their enabled state and the palette key are those already shown,
and gives new keys bound to the footer's compact its value before they mount.

In a narrow terminal (``compact``, under 110 columns) it shows only the keys of ``narrow_keys`` (the most
important ones, the help key among them: it lists the rest); wide, every key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not exported by textual.widgets; the keys Footer yields

if TYPE_CHECKING:
    from textual.screen import Screen

ShownKeys = tuple[object, ...]


class DashboardFooter(Footer):
    """A Footer that recomposes only when what it shows would change (see the module docstring)."""

    def __init__(self, *, id: str | None = None, narrow_keys: frozenset[str] = frozenset()) -> None:
        super().__init__(id=id)
        self.narrow_keys = narrow_keys
        """The keys shown when compact (empty: all of them)."""
        self._composed: ShownKeys | None = None  # what the last compose showed (None: nothing yet)
        self._check_pending = False
        self.recomposes = 0
        """How many times the keys were rebuilt (the tests count them)."""

    def shown_keys(self) -> ShownKeys:
        """Everything Footer.compose reads: the screen's active bindings that show (key, binding, enabled,
        tooltip, how the key displays), the palette's, and the footer's palette and grouping settings."""
        app = self.app
        bindings = tuple(
            (key, active.binding, active.enabled, active.tooltip, app.get_key_display(active.binding))
            for key, active in self.screen.active_bindings.items()
            if active.binding.show or key == app.COMMAND_PALETTE_BINDING
        )
        return (bindings, self.show_command_palette, self.combine_groups, app.ENABLE_COMMAND_PALETTE, self.compact)

    def compose(self) -> ComposeResult:
        self._composed = self.shown_keys() if self._bindings_ready else None
        if self._composed is not None:
            self.recomposes += 1
        compact = self.compact
        only = self.narrow_keys if compact else frozenset()
        for widget in super().compose():
            if isinstance(widget, FooterKey) and only and widget.key not in only and widget.key != "ctrl+p":
                continue
            if isinstance(widget, FooterKey) and "compact" in (widget._reactive_connect or {}):
                # a key bound to the footer's compact (the palette key is not): mount it with the
                # footer's value, so its class is not switched on then off again (two restyles)
                widget.set_reactive(FooterKey.compact, compact)
                widget.set_class(compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._check_pending:
            self._check_pending = True
            self.call_after_refresh(self._recompose_if_changed)

    def watch_compact(self, compact: bool) -> None:
        """Narrow or wide: the keys shown change with it."""
        if self.narrow_keys and self.is_attached and not self._check_pending:
            self._check_pending = True
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._check_pending = False
        if not self.is_attached or self.shown_keys() == self._composed:
            return
        await self.recompose()
