"""Crash-safe replacement of installed files (mode, owner and symlinks kept), on symmtui.fsatomic."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from msgspec import Struct

from symmtui import fsatomic


class Staged(Struct):
    """A fully written and fsynced temp file waiting to replace ``target`` (``real``: the file a symlink names)."""

    target: Path
    temp: Path
    real: Path

    def discard(self) -> None:
        """Remove the temp file (the target is untouched)."""
        with contextlib.suppress(FileNotFoundError):
            self.temp.unlink()


def stage(target: Path, data: bytes) -> Staged:
    """Write ``data`` to a temp file in ``target``'s directory with ``target``'s mode and owner.

    A symlink is followed: the file it names is the one replaced. On any error the temp file is
    removed and the OSError propagates; ``target`` is never touched.
    """
    real = Path(os.path.realpath(target))
    st = real.stat()
    owner = (st.st_uid, st.st_gid) if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0) else None
    return Staged(target, fsatomic.stage(real, data, mode=stat.S_IMODE(st.st_mode), owner=owner), real)


def commit(staged: Staged) -> None:
    """Atomically replace the target with the staged file."""
    fsatomic.commit(staged.temp, staged.real)


def write_atomic(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` atomically, keeping its mode (target must exist)."""
    commit(stage(target, data))


def write_new(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Create or replace a file of our own (state dir) atomically, with ``mode``."""
    fsatomic.write_atomic(path, data, mode=mode)
