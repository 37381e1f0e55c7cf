"""Header line: host, profile name and the readiness state in words and colour."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from symmtui.core.readiness import State
from symmtui.textsafe import visible
from symmtui.ui.widgets.gauge import STATE_ICONS, STATE_WORDS, state_var


class StatusHeader(Widget):
    """One line: `symmtui  host gpu-node  profile glm5-tp8  ● STARTING loading weights`."""

    def __init__(self, host: str, profile: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.host = host
        self.profile = profile
        self.state: State = State.WAITING
        self.detail = ""
        self.note = ""

    def show(self, state: State, detail: str = "", note: str | None = None) -> None:
        changed = (state, detail) != (self.state, self.detail) or (note is not None and note != self.note)
        if note is not None:
            self.note = note
        if changed:
            self.state, self.detail = state, detail
            self.refresh()

    def render(self) -> Content:
        words = f" {STATE_ICONS[self.state]} {STATE_WORDS[self.state]} "
        parts: list[Content | str | tuple[str, str]] = [
            (" symmtui ", "bold reverse $primary"),
            " ",
            (words, f"bold reverse {state_var(self.state)}"),
        ]
        if self.detail:
            parts.append((" " + visible(self.detail), f"bold {state_var(self.state)}"))  # may be log text
        if self.note:
            parts.append(("  [" + self.note + "]", "$accent"))
        parts += [("   host ", "$muted"), (self.host, "bold"), ("  profile ", "$muted"), (self.profile, "bold")]
        return Content.assemble(*parts)
