"""What symmtui launched, per profile: one JSON state file, written atomically (user-only)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from msgspec import Struct
from msgspec.structs import asdict

from symmtui import fsatomic, paths
from symmtui.errors import UserError


class LaunchRecord(Struct, frozen=True):
    """One launch: enough to find (and only find) the processes it started, after a restart too."""

    launch_id: str
    profile_key: str
    profile_path: str
    pid: int
    pgid: int
    sid: int
    create_time: float
    started_at: float
    argv: tuple[str, ...]
    command_hash: str
    log_path: str
    cwd: str
    url: str | None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv)
        d["version"] = 1
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LaunchRecord:
        if not isinstance(d, dict):
            raise TypeError("the launch state must be a JSON object")
        return cls(
            launch_id=str(d["launch_id"]),
            profile_key=str(d["profile_key"]),
            profile_path=str(d["profile_path"]),
            pid=int(d["pid"]),
            pgid=int(d["pgid"]),
            sid=int(d["sid"]),
            create_time=float(d["create_time"]),
            started_at=float(d["started_at"]),
            argv=tuple(str(a) for a in d["argv"]),
            command_hash=str(d["command_hash"]),
            log_path=str(d["log_path"]),
            cwd=str(d["cwd"]),
            url=None if d.get("url") is None else str(d["url"]),
        )


def launch_dir() -> Path:
    """``<state>/symmtui/launch`` (it and ``<state>/symmtui`` 0700 whatever the umask: paths.state_dir)."""
    return paths.state_dir("launch")


def state_path(profile_key: str) -> Path:
    """``<state>/symmtui/launch/<profile key>.json``."""
    return launch_dir() / f"{profile_key}.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically, user-only (0600): see symmtui.fsatomic."""
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    fsatomic.write_atomic(path, text.encode("utf-8"), mode=0o600)


def save(record: LaunchRecord) -> Path:
    """Record ``record`` as the current launch of its profile (atomic replace)."""
    path = state_path(record.profile_key)
    try:
        write_json_atomic(path, record.to_json())
    except OSError as exc:
        raise UserError(f"cannot write launch state {path}: {exc.strerror or exc}; check the disk") from exc
    return path


def load(profile_key: str) -> LaunchRecord | None:
    """The recorded launch of a profile, or None. A corrupt file is a UserError (it is not deleted)."""
    path = state_path(profile_key)
    try:
        data = fsatomic.read_json(path)
        return None if data is None else LaunchRecord.from_json(data)
    except OSError as exc:
        raise UserError(f"cannot read launch state {path}: {exc.strerror or exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(
            f"launch state {path} is corrupt ({exc}); check which server is running, then delete the file"
        ) from exc


def stop_request_path(profile_key: str) -> Path:
    """``<state>/symmtui/launch/<profile key>.stopping``: written by a stop before its first signal."""
    return launch_dir() / f"{profile_key}.stopping"


class StopRequest(Struct, frozen=True):
    """A stop of one launch, recorded before its first signal so its watchers can tell it from a crash."""

    launch_id: str
    by_pid: int
    at: float


def request_stop(record: LaunchRecord, by_pid: int, at: float) -> None:
    """Say that ``record`` is being stopped on purpose (atomic; a failure is an OSError)."""
    write_json_atomic(stop_request_path(record.profile_key),
                      {"launch_id": record.launch_id, "by_pid": by_pid, "at": at, "version": 1})


def stop_requested(profile_key: str, launch_id: str) -> StopRequest | None:
    """The stop recorded for this launch, None when none was (or the note is unreadable)."""
    try:
        data = fsatomic.read_json(stop_request_path(profile_key))
        req = StopRequest(str(data["launch_id"]), int(data["by_pid"]), float(data["at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return req if req.launch_id == launch_id else None


def clear_stop_request(profile_key: str) -> None:
    """Forget a stop note (a new launch starts without one)."""
    with contextlib.suppress(FileNotFoundError):
        stop_request_path(profile_key).unlink()


def clear(profile_key: str, launch_id: str | None = None) -> None:
    """Forget the current launch (only if it is still ``launch_id`` when given)."""
    path = state_path(profile_key)
    if launch_id is not None:
        current = load(profile_key)
        if current is None or current.launch_id != launch_id:
            return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
