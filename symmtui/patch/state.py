"""What symmtui remembers about a patch: original bytes, hashes, a manifest per install, a lock."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from msgspec import Struct
from msgspec.structs import asdict, replace

from symmtui import boundary
from symmtui.boundary import InputError
from symmtui.errors import UserError
from symmtui.fsatomic import read_json
from symmtui.patch.atomic import write_new
from symmtui.paths import state_dir

MANIFEST = "manifest.json"
SCHEMA = 1
MAX_BACKUP_BYTES = 64 << 20  # one saved original (a Python source file)


class StateError(UserError):
    """The state directory is unusable or a record is damaged (exit 3)."""

    exit_code = 3


class Busy(UserError):
    """Another symmtui process holds the patch lock (exit 3)."""

    exit_code = 3


def sha256(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def patches_dir() -> Path:
    """``$XDG_STATE_HOME/symmtui/patches`` (0700); StateError when it cannot be created."""
    try:
        return state_dir("patches")
    except OSError as exc:
        raise StateError(
            f"cannot create symmtui's state directory ({exc.strerror}: {exc.filename}); "
            "set XDG_STATE_HOME to a directory you can write"
        ) from exc
    except InputError as exc:  # not a directory, or HOME=/dev/null: the boundary's line, as a refusal
        raise StateError(str(exc)) from None


class FileRecord(Struct, frozen=True):
    """One patched file: where, its hashes before/after, and the backup's name in the record dir."""

    path: str
    relpath: str
    original_sha256: str
    patched_sha256: str | None
    backup: str
    mode: int


class PatchRecord(Struct, frozen=True):
    """The manifest of one applied patch (one package install)."""

    package: str
    version: str | None
    root: str
    layout: str
    capability: str
    key: int | str
    time: str
    status: str
    files: tuple[FileRecord, ...]
    dir: str

    def backup_bytes(self, f: FileRecord) -> bytes:
        """The original bytes saved for ``f``; StateError if missing or not matching their hash."""
        path = Path(self.dir) / f.backup
        try:
            data = boundary.read_bytes(path, what="the backup", max_bytes=MAX_BACKUP_BYTES)
        except InputError as exc:
            raise StateError(f"{exc}; the original cannot be restored") from exc
        if sha256(data) != f.original_sha256:
            raise StateError(f"the backup {path} does not match its recorded hash; refusing to restore it")
        return data

    def to_json(self) -> dict[str, Any]:
        """The manifest as written to disk."""
        data = asdict(self)
        data["schema"] = SCHEMA
        data["files"] = [asdict(f) for f in self.files]
        del data["dir"]
        return data


def record_dir(package: str, root: Path) -> Path:
    """The record directory for one install (keyed by its resolved path)."""
    digest = sha256(str(root.resolve()).encode())[:16]
    return patches_dir() / f"{package}-{digest}"


def load_record(package: str, root: Path) -> PatchRecord | None:
    """The recorded patch for this install, None if there is none; StateError if damaged."""
    try:
        rdir = record_dir(package, root)
    except StateError:
        return None  # no state dir: nothing was ever recorded by this user
    path = rdir / MANIFEST
    try:
        data = read_json(path)
        if data is None:
            return None
        files = tuple(FileRecord(**f) for f in data["files"])
        return PatchRecord(
            package=data["package"],
            version=data.get("version"),
            root=data["root"],
            layout=data["layout"],
            capability=data["capability"],
            key=data["key"],
            time=data["time"],
            status=data["status"],
            files=files,
            dir=str(rdir),
        )
    except OSError as exc:
        raise StateError(f"cannot read {path} ({exc.strerror})") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise StateError(f"the patch manifest {path} is damaged ({exc}); move it away to continue") from exc


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def save_backups(
    *,
    package: str,
    version: str | None,
    root: Path,
    layout: str,
    capability: str,
    key: int | str,
    originals: dict[Path, tuple[bytes, int]],
) -> PatchRecord:
    """Write the original bytes and a manifest with status ``applying`` before any target changes."""
    rdir = record_dir(package, root)
    if rdir.exists():
        shutil.rmtree(rdir)
    rdir.mkdir(mode=0o700)
    files: list[FileRecord] = []
    try:
        for i, (path, (data, mode)) in enumerate(sorted(originals.items())):
            backup = f"{i}-{path.name}.orig"
            write_new(rdir / backup, data)
            files.append(
                FileRecord(
                    path=str(path),
                    relpath=str(path.relative_to(root)),
                    original_sha256=sha256(data),
                    patched_sha256=None,
                    backup=backup,
                    mode=mode,
                )
            )
        record = PatchRecord(
            package=package,
            version=version,
            root=str(root),
            layout=layout,
            capability=capability,
            key=key,
            time=_now(),
            status="applying",
            files=tuple(files),
            dir=str(rdir),
        )
        _write_manifest(record)
    except BaseException:
        shutil.rmtree(rdir, ignore_errors=True)
        raise
    return record


def _write_manifest(record: PatchRecord) -> None:
    text = json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n"
    write_new(Path(record.dir) / MANIFEST, text.encode())


def mark_applied(record: PatchRecord, patched: dict[str, str]) -> PatchRecord:
    """Record the patched hashes and status ``applied``."""
    files = tuple(replace(f, patched_sha256=patched[f.path]) for f in record.files)
    done = replace(record, files=files, status="applied", time=_now())
    _write_manifest(done)
    return done


def drop_record(record: PatchRecord) -> None:
    """Forget a patch (after a revert, or an apply that changed nothing)."""
    shutil.rmtree(record.dir, ignore_errors=True)


def log_history(event: dict[str, Any]) -> None:
    """Append one JSON line to ``patches/history.jsonl`` (what was done, when)."""
    line = json.dumps({"time": _now(), **event}, sort_keys=True) + "\n"
    fd = boundary.open_regular(patches_dir() / "history.jsonl", what="the patch history", hint="remove it",
                               flags=os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@contextlib.contextmanager
def patch_lock(timeout: float = 30.0) -> Iterator[None]:
    """Hold the per-user patch lock (flock on ``patches/.lock``); Busy after ``timeout`` seconds."""
    path = patches_dir() / ".lock"
    fd = boundary.open_regular(path, what="the patch lock", flags=os.O_RDWR | os.O_CREAT, hint="remove it")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                    raise Busy(
                        f"another symmtui patch (pid {holder}) is still working; wait for it and try again"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
