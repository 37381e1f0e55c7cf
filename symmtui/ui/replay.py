"""`symmtui replay`: the dashboard over a ReplaySession (space pauses, left/right seek); its intents say why not."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from symmtui.bundle.replay import ReplaySession
from symmtui.ui.app import SymmApp


class ReplayApp(SymmApp):
    """The dashboard's widgets, fed by a recording; the keys move along its timeline."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "pause", "Pause", priority=True),
        Binding("left", "seek(-1)", "Back", key_display="←", priority=True),
        Binding("right", "seek(1)", "Forward", key_display="→", priority=True),
    ]

    def __init__(self, session: ReplaySession, *, theme: str | None = None, step: float | None = None) -> None:
        super().__init__(session, theme=theme)
        self.replay = session
        self.step = step if step is not None else max(1.0, session.recording.duration / 20)

    def _where(self) -> str:
        r = self.replay
        state = "paused" if r.paused else f"×{r.speed:g}"
        return f"replay {r.position:.1f} s of {r.recording.duration:.1f} s ({state})"

    def action_pause(self) -> None:
        """Space: pause or resume the timeline."""
        self.replay.toggle_pause()
        self.notify(self._where(), timeout=2)

    def action_seek(self, direction: int) -> None:
        """Left/right: one step back or forward on the timeline (the screen shows that moment)."""
        target = self.replay.seek(direction * self.step)
        state = "paused" if self.replay.paused else f"×{self.replay.speed:g}"
        self.notify(f"replay {target:.1f} s of {self.replay.recording.duration:.1f} s ({state})", timeout=2)
