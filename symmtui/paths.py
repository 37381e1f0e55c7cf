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


def state_dir(*parts: str) -> Path:
    """``$XDG_STATE_HOME/symmtui/<parts>``, created with mode 0700 (it holds pids and backups).

    An unusable place (``HOME=/dev/null``, ``XDG_STATE_HOME`` naming a file, no permission) is an
    InputError naming the directory and the variable to set, before anything is written.
    """
    base = _xdg("XDG_STATE_HOME", ".local/state")
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
