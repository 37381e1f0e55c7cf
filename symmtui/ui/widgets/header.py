"""Header line: host, profile name and the readiness state in words and colour."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from symmtui.judge.board import Board
from symmtui.judge.readiness import State
from symmtui.judge.verdict import WORDS as STATE_WORDS
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

    def show(self, verdict: Board) -> None:
        """The verdict's state and line, and "patched" once the SM120 patch is applied."""
        shown = (verdict.state, verdict.headline, "patched" if verdict.patched else "")
        if shown != (self.state, self.detail, self.note):
            self.state, self.detail, self.note = shown
            self.refresh()

    def render(self) -> Content:
        """The badge and the state always; then what fits of the detail, the note, the host and the profile
        (the profile goes first, then the host's label, then the detail is cut with an ellipsis)."""
        words = f" {STATE_ICONS[self.state]} {STATE_WORDS[self.state]} "
        head: list[Content | str | tuple[str, str]] = [
            (" symmtui ", "bold reverse $primary"),
            " ",
            (words, f"bold reverse {state_var(self.state)}"),
        ]
        width = self.size.width or 200
        detail = visible(self.detail)  # may be log text
        note = f"  [{self.note}]" if self.note else ""
        tails = [f"   host {self.host}  profile {self.profile}", f"   host {self.host}", f"   {self.host}"]
        used = 9 + 1 + len(words)
        for tail in tails:  # the detail whole if it fits with the host at least; else cut, the host kept
            room = width - used - len(note) - len(tail)
            if room >= len(detail) + 1:
                break
        if detail and room < len(detail) + 1:
            detail = detail[: max(0, room - 2)] + "…" if room > 2 else ""
        parts = list(head)
        if detail:
            parts.append((" " + detail, f"bold {state_var(self.state)}"))
        if note:
            parts.append((note, "$accent"))
        if tail.startswith("   host "):
            parts += [("   host ", "$muted"), (self.host, "bold")]
            if "profile" in tail:
                parts += [("  profile ", "$muted"), (self.profile, "bold")]
        else:
            parts += [("   ", ""), (self.host, "bold")]
        return Content.assemble(*parts)
