"""Where symmtui keeps its files: XDG state, cache and config directories, created user-only."""

from __future__ import annotations

import os
from pathlib import Path

from symmtui.errors import InputError
from symmtui.textsafe import shown

_FIX = "set XDG_STATE_HOME to a writable directory"


def usable_dir(path: Path, *, what: str, env: str) -> None:
    """Create ``path`` (and parents) if needed; an error says which variable to set instead."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(20, "Not a directory")
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise InputError(f"cannot use {what} {shown(str(path))} ({reason}); "
                         f"set {env} to a writable directory") from None


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var, "")
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


_USER_STATE: Path | None = None  # the user's own state home, kept before the demo points its own elsewhere
_ISOLATED: Path | None = None  # where the demo pointed it


def keep_user_state(isolated: Path) -> None:
    """Remember the user's state home now, as the demo points XDG_STATE_HOME to ``isolated`` (in its temp dir):
    what the user saves in the demo (exports, stack dumps, its bundle) goes there and outlives it. A second
    demo in one process keeps the user's, not the first demo's."""
    global _USER_STATE, _ISOLATED
    current = _xdg("XDG_STATE_HOME", ".local/state")
    if _ISOLATED is None or current != _ISOLATED:
        _USER_STATE = current
    _ISOLATED = isolated


def user_state_dir(*parts: str) -> Path:
    """``state_dir(*parts)`` of the user's own state home, also inside the demo (see ``keep_user_state``)."""
    isolated = _ISOLATED is not None and _xdg("XDG_STATE_HOME", ".local/state") == _ISOLATED
    return state_dir(*parts, base=_USER_STATE if isolated else None)


def state_dir(*parts: str, base: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/symmtui/<parts>``, created with mode 0700 (it holds pids and backups).

    An unusable place (``HOME=/dev/null``, ``XDG_STATE_HOME`` naming a file, no permission) is an
    InputError naming the directory and the variable to set, before anything is written.
    """
    base = base if base is not None else _xdg("XDG_STATE_HOME", ".local/state")
    usable_dir(base, what="the state directory", env="XDG_STATE_HOME")
    path = base / "symmtui"
    # mkdir(parents=True, mode=...) applies the mode to the last folder only, and the umask
    # still masks it: create and chmod each of our own levels.
    for part in ("", *parts):
        if part:
            path = path / part
        try:
            path.mkdir(exist_ok=True, mode=0o700)
            os.chmod(path, 0o700)
            if not path.is_dir():
                raise NotADirectoryError(20, "Not a directory")
        except OSError as exc:
            raise InputError(f"cannot use the state directory {shown(str(path))} ({exc.strerror}); {_FIX}") from None
    return path


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/symmtui`` (not created here: what is kept there can be remade)."""
    return _xdg("XDG_CACHE_HOME", ".cache") / "symmtui"


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/symmtui`` (not created: it is only read)."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "symmtui"
