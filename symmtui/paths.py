"""Where symmtui keeps its files: XDG state and config directories, created user-only."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var, "")
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def state_dir(*parts: str) -> Path:
    """``$XDG_STATE_HOME/symmtui/<parts>``, created with mode 0700 (it holds pids and backups)."""
    base = _xdg("XDG_STATE_HOME", ".local/state")
    base.mkdir(parents=True, exist_ok=True)
    path = base / "symmtui"
    # mkdir(parents=True, mode=...) applies the mode to the last folder only, and the umask
    # still masks it: create and chmod each of our own levels.
    for part in ("", *parts):
        if part:
            path = path / part
        path.mkdir(exist_ok=True, mode=0o700)
        os.chmod(path, 0o700)
    return path


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/symmtui`` (not created: it is only read)."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "symmtui"
