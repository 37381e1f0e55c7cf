"""Test helpers for the log follower: a watch() thread that collects items, and a writer child process."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from symmtui.logs.follow import FileNotice, LogFollower, LogItem, LogLine

WRITER = Path(__file__).resolve().parents[1] / "fixtures" / "log_writer.py"
WAIT = 20.0  # generous: a loaded CI box must not make these flaky


class Collector:
    """Runs `follower.watch()` in a thread and keeps every item, with arrival times."""

    def __init__(self, follower: LogFollower, **watch_kw: Any) -> None:
        self.follower = follower
        self.items: list[LogItem] = []
        self.times: list[float] = []
        self.batches = 0
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, kwargs=watch_kw, daemon=True)

    def _run(self, **watch_kw: Any) -> None:
        try:
            self.follower.watch(self.stop, self._on_batch, **watch_kw)
        except BaseException as exc:  # also re-raised in the test thread by close()
            self.error = exc
            raise

    def _on_batch(self, items: list[LogItem]) -> None:
        now = time.monotonic()
        with self.cond:
            self.items.extend(items)
            self.times.extend([now] * len(items))
            self.batches += 1
            self.cond.notify_all()

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stop.set()
        self.follower.wake()
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "watch() did not return after stop was set"
        self.follower.close()
        if self.error is not None:
            raise self.error

    def wait_for(self, pred: Callable[[list[LogItem]], bool], timeout: float = WAIT) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: pred(self.items) or self.error is not None, timeout) and (
                self.error is None
            )

    def wait_text(self, text: str, timeout: float = WAIT) -> bool:
        return self.wait_for(lambda items: any(final(i) and i.text == text for i in items), timeout)

    def wait_notice(self, kind: str, count: int = 1, timeout: float = WAIT) -> bool:
        return self.wait_for(lambda items: len(notices(items, kind)) >= count, timeout)

    def texts(self) -> list[str]:
        with self.cond:
            return [i.text for i in self.items if final(i)]

    def kinds(self) -> list[str]:
        with self.cond:
            return [i.kind for i in self.items if isinstance(i, FileNotice)]


def final(item: LogItem) -> bool:
    return isinstance(item, LogLine) and not item.progress


def notices(items: list[LogItem], kind: str) -> list[FileNotice]:
    return [i for i in items if isinstance(i, FileNotice) and i.kind == kind]


def final_texts(items: list[LogItem]) -> list[str]:
    return [i.text for i in items if isinstance(i, LogLine) and not i.progress]


def poll_all(follower: LogFollower) -> list[LogItem]:
    """poll() until no backlog is left."""
    out = follower.poll()
    while follower.has_more:
        out += follower.poll()
    return out


class Writer:
    """A real writer process (tests/fixtures/log_writer.py) driven by JSON commands."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def do(self, op: str, **kw: Any) -> float:
        """Run one command; returns the writer's time.monotonic() just before it acted."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, f"writer died (rc={self.proc.poll()})"
        return float(json.loads(reply)["t"])

    def write(self, data: str) -> float:
        return self.do("write", data=data)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_flood(path: Path, rate: int, seconds: float, rotate_every: int = 0,
                rotate_ack: Path | None = None) -> subprocess.Popen[str]:
    """A writer child that appends `rate` numbered lines per second for `seconds` (see log_writer.py;
    ``rotate_ack``: it rotates again only once the reader acked the file of the last rotation)."""
    ack = ["--rotate-ack", str(rotate_ack)] if rotate_ack is not None else []
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(path), "--rate", str(rate), "--seconds", str(seconds),
         "--rotate-every", str(rotate_every), *ack],
        stdout=subprocess.PIPE,
        text=True,
    )


def finish_flood(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """Wait for a flood writer and return its report ({"lines", "rotations", "seconds"})."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"flood writer failed (rc={proc.returncode})"
    report: dict[str, Any] = json.loads(out)
    return report
