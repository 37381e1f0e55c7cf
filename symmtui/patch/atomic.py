"""Crash-safe file replacement: stage a temp file beside the target, fsync, rename, fsync the dir."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Staged:
    """A fully written and fsynced temp file waiting to replace ``target`` (``real``: the file a symlink names)."""

    target: Path
    temp: Path
    real: Path

    def discard(self) -> None:
        """Remove the temp file (the target is untouched)."""
        with contextlib.suppress(FileNotFoundError):
            self.temp.unlink()


def _write_temp(directory: Path, prefix: str, suffix: str, data: bytes, mode: int,
                owner: tuple[int, int] | None = None) -> Path:
    """A new temp file in ``directory`` holding ``data``, fsynced, with ``mode`` (and ``owner``).

    On any error the temp file is removed and the error propagates.
    """
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    temp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
            if owner is not None:
                os.fchown(fh.fileno(), *owner)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    return temp


def stage(target: Path, data: bytes) -> Staged:
    """Write ``data`` to a temp file in ``target``'s directory with ``target``'s mode and owner.

    A symlink is followed: the file it names is the one replaced. On any error the temp file is
    removed and the OSError propagates; ``target`` is never touched.
    """
    real = Path(os.path.realpath(target))
    st = real.stat()
    owner = (st.st_uid, st.st_gid) if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0) else None
    temp = _write_temp(real.parent, f".{real.name}.", ".symmtui-tmp", data, stat.S_IMODE(st.st_mode), owner)
    return Staged(target, temp, real)


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(staged: Staged) -> None:
    """Atomically replace the target with the staged file."""
    os.replace(staged.temp, staged.real)
    fsync_dir(staged.real.parent)


def write_atomic(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` atomically, keeping its mode (target must exist)."""
    commit(stage(target, data))


def write_new(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Create or replace a file of our own (state dir) atomically, with ``mode``."""
    temp = _write_temp(path.parent, f".{path.name}.", ".tmp", data, mode)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    fsync_dir(path.parent)
