"""Helpers for the notification tests: real snapshots from the fixture logs, a real webhook receiver on 127.0.0.1."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from symmtui.judge.events import EventBuilder
from symmtui.judge.readiness import Readiness, ReadinessConfig, Snapshot

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Copies, one folder per test process: `wait` and the dashboard record a bundle next to the log they
# judge, which must not land in tests/fixtures.
_COPIES = Path(tempfile.mkdtemp(prefix="symmtui-notify-"))
atexit.register(shutil.rmtree, _COPIES, ignore_errors=True)
READY_LOG = Path(shutil.copy(FIXTURES / "sglang-tp8-ready.log", _COPIES))
KEYERROR_LOG = Path(shutil.copy(FIXTURES / "sglang-tp8-symm-mem-keyerror.log", _COPIES))
TOKEN = "tk_s3cr3tT0kenNeverPrinted"


def snapshot_of(log: Path) -> Snapshot:
    """The verdict a fixture log gives (the engine's own event builder and readiness machine)."""
    b = EventBuilder()
    r = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
    for i, line in enumerate(log.read_text().splitlines(), 1):
        r.feed_activity(i * 0.01, [line])
        for ev in b.feed_plain(i, line):
            r.feed(ev, i * 0.01)
    for ev in b.flush():
        r.feed(ev, 10.0)
    return r.snapshot(10.0)


@dataclass
class Received:
    path: str
    body: dict[str, object]
    headers: dict[str, str]


@dataclass
class Receiver:
    """What the loopback webhook server got; ``plan`` per path: a list of actions ("ok", "500", "hang")
    taken in turn (the last one repeats)."""

    port: int = 0
    got: list[Received] = field(default_factory=list)
    plan: dict[str, list[str]] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.got) >= count:
                    return list(self.got)
            time.sleep(0.01)
        raise AssertionError(f"the webhook server got {len(self.got)} requests, not {count}")


@contextmanager
def receiver() -> Iterator[Receiver]:
    """A real HTTP server on 127.0.0.1 (a thread) that records each POST and answers as planned."""
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with rec.lock:
                rec.got.append(Received(self.path, body, dict(self.headers)))
                key = self.path.split("?", 1)[0]
                steps = rec.plan.get(key, ["ok"])
                action = steps.pop(0) if len(steps) > 1 else steps[0]
            if action == "hang":
                rec.release.wait(30)
                return
            code = 500 if action == "500" else 200
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    rec.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        rec.release.set()
        server.shutdown()
        server.server_close()
