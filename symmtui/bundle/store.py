"""Where bundles live: the state dir's ``bundles/``, named after the log and the time, each file created by one
run only (``O_EXCL``), the oldest removed past the last 20 per log and 200 MB in all.

A run's name is ``STEM.YYYYmmdd-HHMMSS[-N].symmtui-bundle.json.gz``. ``STEM`` is the log's file name and a
hash of its real path (two logs called ``server.log`` are two logs), or the session's name where there
is no log (``wait --url``). The name is reserved with ``O_CREAT | O_EXCL`` (a taken one gives ``-2``,
``-3`` ...), so two runs never write one file; the run's own later writes replace it atomically.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

from symmtui import fsatomic, paths
from symmtui.bundle.format import SUFFIX

KEEP_PER_LOG = 20  # bundles kept per STEM, the newest
KEEP_BYTES = 200 << 20  # bytes of bundles kept in all (the newest first), the demo's included
MAX_TRIES = 1000  # -2 ... -999: runs of one log started in the same second
_NAME = re.compile(r"(?P<stem>.+)\.\d{8}-\d{6}(?:-\d+)?" + re.escape(SUFFIX))


def store_dir() -> Path:
    """``$XDG_STATE_HOME/symmtui/bundles`` (created 0700; an unusable one is an InputError)."""
    return paths.state_dir("bundles")


def _safe(text: str, limit: int = 60) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:limit] or "session"


def stem(log: str | os.PathLike[str] | None, name: str) -> str:
    """The name part a run's bundles share: its log's (file name and path hash), else the session's."""
    if log is None or str(log) == "":
        return _safe(name)
    real = os.path.realpath(log)
    return f"{_safe(os.path.basename(real))}-{hashlib.sha256(real.encode()).hexdigest()[:8]}"


def place(data: bytes, stem_: str, started: float, directory: Path | None = None) -> Path:
    """Write ``data`` as a new bundle of ``stem_`` started at ``started`` (epoch seconds) and return its
    path: the first free name is reserved with ``O_EXCL`` (no other run can take it), then replaced
    atomically by the whole file. Prunes the directory after."""
    folder = directory if directory is not None else store_dir()
    path = reserve(stem_, started, folder)
    try:
        fsatomic.write_atomic(path, data, mode=0o600, durable=False)
    except BaseException:
        path.unlink(missing_ok=True)  # the reservation of a bundle never written
        raise
    prune(folder, keep=path)
    return path


def reserve(stem_: str, started: float, folder: Path) -> Path:
    """A new bundle name of ``stem_`` started at ``started`` in ``folder``, taken with ``O_EXCL`` (an empty file:
    no other run can take it; never the newest until written)."""
    base = f"{stem_}.{time.strftime('%Y%m%d-%H%M%S', time.localtime(started))}"
    for n in range(1, MAX_TRIES):
        path = folder / (f"{base}{SUFFIX}" if n == 1 else f"{base}-{n}{SUFFIX}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{MAX_TRIES} bundles of {stem_} started in the same second in {folder}")


def _bundles(folder: Path) -> list[tuple[int, Path, int]]:
    """``(mtime_ns, path, bytes)`` of every bundle file in ``folder``, oldest first (temp files left out)."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.endswith(SUFFIX) or entry.name.startswith("."):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if entry.is_file(follow_symlinks=False):
            found.append((st.st_mtime_ns, Path(entry.path), st.st_size))
    return sorted(found)


def prune(folder: Path, *, keep: Path | None = None, per_log: int = KEEP_PER_LOG, total: int = KEEP_BYTES) -> list[Path]:
    """Remove the oldest bundles past the last ``per_log`` of each stem and past ``total`` bytes in all;
    ``keep`` (the one just written) is never removed. Returns what was removed."""
    removed: list[Path] = []
    seen: dict[str, int] = {}
    kept = 0
    full = False  # past ``total``: every older bundle goes (the oldest are removed first)
    for _mtime, path, nbytes in reversed(_bundles(folder)):  # newest first
        m = _NAME.fullmatch(path.name)
        group = m.group("stem") if m else None
        count = seen.get(group, 0) + 1 if group is not None else 0
        full = full or kept + nbytes > total
        if path == keep or not (full or count > per_log):
            kept += nbytes
            if group is not None:
                seen[group] = count
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            pass  # another run pruned it first
        except OSError:
            continue  # not ours to remove (a read-only folder): kept, and counted no further
        removed.append(path)
    return removed


def newest(folder: Path | None = None, stems: set[str] | None = None) -> Path | None:
    """The most recently written bundle (of one of ``stems`` when given); an empty reservation is not one."""
    for _mtime, path, nbytes in reversed(_bundles(folder if folder is not None else store_dir())):
        m = _NAME.fullmatch(path.name)
        if nbytes and (stems is None or (m is not None and m.group("stem") in stems)):
            return path
    return None
