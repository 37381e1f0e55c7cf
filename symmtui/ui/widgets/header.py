"""Header line: host, profile name and the readiness state in words and colour."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from symmtui.core.readiness import State
from symmtui.core.verdict import WORDS as STATE_WORDS
from symmtui.core.verdict import Verdict
from symmtui.textsafe import visible
from symmtui.ui.widgets.gauge import STATE_ICONS, state_var


class StatusHeader(Widget):
    """One line: `symmtui  host gpu-node  profile glm5-tp8  ● STARTING loading weights`."""

    def __init__(self, host: str, profile: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.host = host
        self.profile = profile
        self.state: State = State.WAITING
        self.detail = ""
        self.note = ""

    def show(self, verdict: Verdict) -> None:
        """The verdict's state and line, and "patched" once the SM120 patch is applied."""
        shown = (verdict.state, verdict.headline, "patched" if verdict.patched else "")
        if shown != (self.state, self.detail, self.note):
            self.state, self.detail, self.note = shown
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
