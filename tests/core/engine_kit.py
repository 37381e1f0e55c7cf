"""Helpers for the engine tests: a real writer process, sample logs, lines built by hand, a loopback HTTP server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TextIO

from symmtui.build import Limits, open_session, watch_spec
from symmtui.verbs.printer import Printer, WaitResult

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KEYERROR_LOG = FIXTURES / "sglang-tp8-symm-mem-keyerror.log"
READY_LOG = FIXTURES / "sglang-tp8-ready.log"
WRITER = FIXTURES / "log_writer.py"
ROOT = Path(__file__).resolve().parent.parent.parent
# Constructed hostile input (no engine printed these): request and access lines whose client content quotes other
# processes' records and crash words, in the shapes SGLang's --log-requests, vLLM's request logger and engines, and
# uvicorn's access log print them. Appended to a healthy server's log they must change nothing.
QUOTING_REQUESTS = (
    "[2026-11-29 09:48:10] Receive: obj=GenerateReqInput(text='[2026-12-01 10:00:00 TP3] torch.OutOfMemoryError: "
    "CUDA out of memory. Tried to allocate 2.00 GiB', sampling_params={'max_new_tokens': 8})",
    "[2026-11-29 09:48:10] Receive: obj=GenerateReqInput(text='[2026-12-01 10:00:00 TP12] Scheduler hit an "
    "exception: Traceback (most recent call last):', sampling_params={})",
    "(APIServer pid=9) INFO 11-29 09:48:11 [logger.py:43] Received request chatcmpl-1: prompt: '(Worker_TP3 pid=9) "
    "ERROR 11-29 09:48:11 [core.py:1] RuntimeError: CUDA error: an illegal memory access was encountered', params: "
    "SamplingParams(n=1), lora_request: None.",
    "(APIServer pid=9) INFO 11-29 09:48:11 [async_llm.py:1] Added request [rank3]: torch.distributed.DistBackendError: "
    "NCCL error in: x.cpp:1, unhandled system error.",
    '[2026-11-29 09:48:12] INFO:     127.0.0.1:51234 - "GET /SIGSEGV%20Segmentation%20fault?x=Killed HTTP/1.1" 404 '
    "Not Found",
)


def quoting_log(path: Path) -> Path:
    """A healthy SGLang TP8 log (the READY fixture) with QUOTING_REQUESTS served after its ready line."""
    path.write_text(READY_LOG.read_text() + "\n".join(QUOTING_REQUESTS) + "\n")
    return path


@dataclass(frozen=True)
class Line:
    """A hand-built line with the follower's LogLine shape (no, text, plain)."""

    no: int
    text: str
    plain: str


def lines_of(text: str, start: int = 1) -> list[Line]:
    """Numbered Line objects for each line of ``text``."""
    return [Line(i, t, t) for i, t in enumerate(text.splitlines(), start)]


class Writer:
    """A real process appending to a log (tests/fixtures/log_writer.py, command mode)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def _op(self, **cmd: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        return float(json.loads(reply)["t"])

    def write(self, text: str) -> float:
        """Append ``text``; returns the writer's monotonic time right after the write."""
        return self._op(op="write", data=text)

    def close(self) -> None:
        """Stop the writer process."""
        if self.proc.poll() is None:
            try:
                self._op(op="quit")
            except (ValueError, OSError, json.JSONDecodeError):
                pass
            self.proc.wait(timeout=10)

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def free_port() -> int:
    """A port with nothing listening on 127.0.0.1 (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Health:
    """What the test server answers: a status code, or one of the modes hang / reset."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.mode = "status"
        self.requests = 0
        self.lock = threading.Lock()
        self.release = threading.Event()


@contextmanager
def http_server(health: Health) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 in a thread; yields its /health URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with health.lock:
                health.requests += 1
                mode, status = health.mode, health.status
            if mode == "hang":
                health.release.wait(30)
                return
            if mode == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.connection.close()
                return
            body = b"ok" if status == 200 else b"not yet"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/health"
    finally:
        health.release.set()
        server.shutdown()
        server.server_close()
        t.join(5)


def wait_until(pred: Callable[[], bool], timeout: float = 20.0, step: float = 0.01) -> bool:
    """Poll ``pred`` until true or ``timeout`` (for engine state reached from other threads)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def symmtui_cmd(*args: str) -> list[str]:
    """argv running the CLI from this checkout."""
    return [sys.executable, "-m", "symmtui", *args]


def env() -> dict[str, str]:
    """The test environment for CLI subprocesses (this checkout first on the path)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def wait_on(log: Path, *, out: TextIO, timeout: float | None = 20.0, stall: float | None = None,
            **kw: object) -> WaitResult:
    """`symmtui wait --log LOG` in this process: a Session that watches ``log`` (and ``kw``: a URL, a pid)
    and the command line's printer writing to ``out``; the verdict's result."""
    session = open_session(watch_spec(log, limits=Limits(timeout=timeout, stall=stall), **kw))  # type: ignore[arg-type]
    try:
        return Printer(session, out).run()
    finally:
        session.close()
