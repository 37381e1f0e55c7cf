"""One `symmtui launch` per profile at a time: a lock held from before the launch until its verdict.

The Supervisor's own lock covers a launch or a stop while it runs; this one covers the whole `launch`
verb (stop the old server, launch, wait, record). A second `symmtui launch` of the same profile
meanwhile exits 4 (``EXIT_BUSY``) before it stops, launches or writes anything. `symmtui stop` is not
blocked by it: a stop during the wait is how the waiting launch ends as STOPPED.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from symmtui.errors import UserError
from symmtui.launch.state import launch_dir

EXIT_BUSY = 4
"""Exit code of a `symmtui launch` refused because another one holds the profile."""


class ProfileBusy(UserError):
    """Another `symmtui launch` of this profile is running (exit 4); nothing was done."""

    exit_code = EXIT_BUSY


def claim_path(profile_key: str) -> Path:
    """``<state>/symmtui/launch/<profile key>.launching``: the lock file (it holds the owner's pid)."""
    return launch_dir() / f"{profile_key}.launching"


class Claim:
    """The held lock; ``release()`` it (the kernel releases it too when the process ends)."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd: int | None = fd
        self.path = path

    def release(self) -> None:
        """Let the next `symmtui launch` of this profile in (idempotent)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def _holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        text = os.pread(fd, 64, 0).decode("ascii", "replace").split()
        if text:
            return f" (pid {int(text[0])})"
    return ""


def claim(profile_key: str, config_hint: str = "") -> Claim:
    """Hold the profile for one `symmtui launch`; ProfileBusy (exit 4) if another one holds it."""
    path = claim_path(profile_key)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise UserError(f"cannot open {path}: {exc.strerror or exc}; check symmtui's state directory") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        who = _holder(fd)
        os.close(fd)
        raise ProfileBusy(
            f"another `symmtui launch` of this profile is running{who}; nothing was done: wait for its verdict, "
            f"or end its server with `symmtui stop{config_hint}`"
        ) from None
    except OSError as exc:
        os.close(fd)
        raise UserError(f"cannot lock {path}: {exc.strerror or exc}") from exc
    with contextlib.suppress(OSError):  # the pid is only for the loser's message; the lock is what counts
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {time.time():.0f}\n".encode(), 0)
    return Claim(fd, path)
