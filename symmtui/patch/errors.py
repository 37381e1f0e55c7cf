"""The patch's errors: every one means nothing was changed (except ``reason="partial"``, said so)."""

from __future__ import annotations

from symmtui.errors import UserError


class PatchError(UserError):
    """A patch operation that stopped with nothing changed; ``detail`` holds extra lines to show."""

    exit_code = 3

    def __init__(self, message: str, *, reason: str, detail: str = "", exit_code: int | None = None) -> None:
        super().__init__(message, exit_code=exit_code)
        self.reason = reason
        self.detail = detail


class UnsupportedLayout(PatchError):
    """The installed files are not a layout symmtui knows (exit 2): a refusal, not a guess."""

    exit_code = 2


class Refused(PatchError):
    """Refused with nothing changed (exit 3): permissions, a changed file, a hand edit, ..."""

    exit_code = 3
