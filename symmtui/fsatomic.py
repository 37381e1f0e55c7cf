"""Crash-safe state files: writes go to a temp file beside the target, fsynced, renamed over it; reads say "none yet"."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from symmtui import boundary

# Every temp file ends so: a stray one (left by a power cut) says whose it is, and matches ``*.tmp``.
TEMP_SUFFIX = ".symmtui.tmp"


def fsync_dir(path: Path) -> None:
    """Make a rename in the directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(temp: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()


def stage(path: Path, data: bytes, *, mode: int, owner: tuple[int, int] | None = None,
          durable: bool = True) -> Path:
    """A new temp file beside ``path`` holding ``data``, fsynced, with ``mode`` (and ``owner``: uid, gid).

    ``durable`` False skips the fsync (a report artifact rewritten often: still all-or-nothing for readers).

    ``path`` itself is not touched (nor need it exist). On any error the temp file is removed and the
    error propagates.
    """
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    temp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            if owner is not None:
                os.fchown(fh.fileno(), *owner)  # before fchmod: a chown may clear set-id bits
            os.fchmod(fh.fileno(), mode)  # mkstemp's 0600 until here, whatever the umask
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
    except BaseException:
        _remove(temp)
        raise
    return temp


def commit(temp: Path, path: Path, *, durable: bool = True) -> None:
    """Rename the staged ``temp`` over ``path`` (a symlink there is replaced, not followed), fsync the dir.

    If the rename fails the temp file is removed and the error propagates; ``path`` is untouched.
    """
    try:
        os.replace(temp, path)
    except BaseException:
        _remove(temp)
        raise
    if durable:
        fsync_dir(path.parent)


def write_atomic(path: Path, data: bytes, *, mode: int = 0o600, owner: tuple[int, int] | None = None,
                 durable: bool = True) -> None:
    """Create or replace ``path`` with ``data`` and ``mode``: readers see the old file or the new, never part.

    ``durable`` False: no fsync of the file and its directory (after a power cut the old file or none may
    be there; readers still never see part of one): for files rewritten often whose loss costs little."""
    commit(stage(path, data, mode=mode, owner=owner, durable=durable), path, durable=durable)


MAX_STATE_BYTES = 4 << 20  # a state file read back (a launch record, a patch manifest: a few KiB)


def read_json(path: Path) -> Any:
    """The JSON document a state file holds (never null); None when there is no such file yet.

    Read through the CLI boundary (a FIFO or a device is never opened, the size is capped). OSError
    when it cannot be read and ValueError when it is not JSON text or not a regular file (an
    InputError): the caller words both for its own file (what it is, what to do).
    """
    if boundary.regular_file(path, what="the state file", missing_ok=True, hint="remove it") is None:
        return None
    data = json.loads(boundary.read_bytes(path, what="the state file", max_bytes=MAX_STATE_BYTES, hint="remove it"))
    if data is None:
        raise ValueError("the document is JSON null")
    return data
