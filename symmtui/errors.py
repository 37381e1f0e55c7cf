"""User-facing errors: one line that says what to do, with the exit code it leads to."""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input or environment, printed as one line (no traceback)."""

    exit_code: int = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(UserError, ValueError):
    """A bad user-supplied value; also a ValueError, so code that treats bad data as ValueError agrees."""
