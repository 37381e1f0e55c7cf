"""Hostile health endpoints on 127.0.0.1 (raw sockets): an endless 200 body, redirects off the host, slowloris."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from symmtui import cli
from symmtui.bringup.probe import HttpProbe, ProbeResult
from tests.core.engine_kit import Health, http_server

Handler = Callable[[socket.socket, threading.Event], None]


class RawServer:
    """Accepts on 127.0.0.1; each connection is read up to the blank line, then given to ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.stop = threading.Event()
        self.requests: list[bytes] = []
        self.sent = 0
        self.client_gone = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/health"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                self.requests.append(data)
                self.handler(conn, self.stop)
            except OSError:  # the probe hung up: what these tests want to see
                self.client_gone.set()


@contextmanager
def raw_server(handler: Handler) -> Iterator[RawServer]:
    server = RawServer(handler)
    server.thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.thread.join(5)
        server.sock.close()


def endless_body(server_box: list[RawServer]) -> Handler:
    def handle(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        block = b"x" * 65536
        while not stop.is_set():
            conn.sendall(block)
            server_box[0].sent += len(block)

    return handle


def second_check_peak(url: str) -> tuple[ProbeResult, int]:
    """One check's answer and its peak traced memory, measured on a second check: the first one imports
    httpx's transport (httpcore, anyio, h11), which is not the request's memory."""
    probe = HttpProbe(url, timeout=5)
    probe.check()
    tracemalloc.start()
    try:
        res = probe.check()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return res, peak


def test_a_200_whose_body_never_ends_is_read_no_further_than_its_headers() -> None:
    box: list[RawServer] = []
    with raw_server(endless_body(box)) as server:
        box.append(server)
        res, peak = second_check_peak(server.url)
        assert server.client_gone.wait(10)  # the probe closed the connection: the server's send failed
    assert res.ok and res.kind == "up" and res.status == 200
    assert peak < 1 << 20, f"the probe held {peak} bytes"


def test_a_header_section_that_never_ends_is_refused_with_bounded_memory() -> None:
    def endless_header(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Filler: ")
        block = b"a" * 65536
        while not stop.is_set():
            conn.sendall(block)

    with raw_server(endless_header) as server:
        res, peak = second_check_peak(server.url)
    assert not res.ok and res.kind == "error" and "headers exceed 100 KiB" in res.detail, res.detail
    assert peak < 1 << 20, f"the probe held {peak} bytes"


def test_a_redirect_to_another_host_is_not_followed_and_is_named() -> None:
    other = Health(200)
    with http_server(other) as elsewhere:
        def to_elsewhere(conn: socket.socket, stop: threading.Event) -> None:
            conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {elsewhere}\r\nContent-Length: 0\r\n\r\n".encode())

        with raw_server(to_elsewhere) as server:
            res = HttpProbe(server.url).check()
    assert not res.ok and res.kind == "redirect" and res.status == 302 and res.url == elsewhere
    assert f"GET {server.url} answered 302, pointing to {elsewhere}: not followed (another host)" == res.detail
    assert other.requests == 0


def test_a_redirect_on_the_same_host_is_followed_and_the_evidence_names_where() -> None:
    def handle(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /healthz\r\nContent-Length: 0\r\n\r\n")

    def handle_target(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def route(conn: socket.socket, stop: threading.Event) -> None:
        (handle_target if server.requests[-1].startswith(b"GET /healthz ") else handle)(conn, stop)

    with raw_server(route) as server:
        res = HttpProbe(server.url).check()
    target = server.url.replace("/health", "/healthz")
    assert res.ok and res.url == target and f"GET {target} answered 200" in res.detail
    assert res.detail.endswith(f"(redirected from {server.url})")


def test_a_redirect_to_a_malformed_url_is_reported_not_raised() -> None:
    def broken(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://[::1/health\r\nContent-Length: 0\r\n\r\n")

    with raw_server(broken) as server:
        res = HttpProbe(server.url).check()
    assert not res.ok and res.kind == "redirect" and res.status == 302
    assert res.detail == f"GET {server.url} answered 302, pointing to http://[::1/health: not followed (not a valid URL)"


def test_a_redirect_loop_on_the_same_host_ends() -> None:
    def loop(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /health\r\nContent-Length: 0\r\n\r\n")

    with raw_server(loop) as server:
        res = HttpProbe(server.url).check()
    assert not res.ok and res.kind == "redirect" and "more than 5 redirects" in res.detail
    assert len(server.requests) == 6


def test_server_text_in_the_answer_is_shown_escaped_and_short() -> None:
    def nasty(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 503 \x1b]0;pwned\x07" + b"A" * 5000 + b"\r\n\r\n")

    with raw_server(nasty) as server:
        res = HttpProbe(server.url).check()
    assert res.status == 503 and "\x1b" not in res.detail and "\\x1b]0;pwned\\x07" in res.detail
    assert len(res.detail) < 400


def slowloris(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while not stop.is_set():
        conn.sendall(b"X")  # a header line that never ends, one byte at a time
        time.sleep(0.05)


def test_the_timeout_is_a_deadline_against_a_slowloris_endpoint() -> None:
    with raw_server(slowloris) as server:
        t0 = time.monotonic()
        res = HttpProbe(server.url, timeout=0.5).check()
        took = time.monotonic() - t0
    assert not res.ok and res.kind == "timeout" and "no complete answer within 0.5 s" in res.detail
    assert took < 2  # one deadline for the whole answer, however many bytes trickle in (2 s: the default)


def test_stop_does_not_wait_for_a_request_in_flight() -> None:
    with raw_server(slowloris) as server:
        probe = HttpProbe(server.url, timeout=30.0)
        stop = threading.Event()
        t = threading.Thread(target=probe.run, args=(stop, lambda r: None))
        t.start()
        assert _wait(lambda: len(server.requests) >= 1)
        stop.set()
        t.join(3)
        assert not t.is_alive()


def test_wait_against_slowloris_prints_timed_out_and_exits_at_the_timeout(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n")
    with raw_server(slowloris) as server:
        proc = subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--url", server.url,
                                 "--timeout", "1", "--no-record"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ))
        timed_out_at: float | None = None
        lines: list[str] = []
        assert proc.stdout is not None
        try:
            for line in proc.stdout:  # the verdict line, then the process must end right away
                lines.append(line)
                if line.startswith("TIMED OUT"):
                    timed_out_at = time.monotonic()
                    break
            rest, err = proc.communicate(timeout=60)
            ended_at = time.monotonic()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert timed_out_at is not None and proc.returncode == 124, "".join(lines) + err
    assert "TIMED OUT after 1.0 s" in lines[-1]  # the probe's own 2 s deadline is still running then
    assert ended_at - timed_out_at < 3, f"exited {ended_at - timed_out_at:.1f} s after printing TIMED OUT"


def test_wait_never_calls_ready_on_a_redirect_to_another_host(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:48:04] The server is fired up and ready to roll!\n")
    other = Health(200)
    with http_server(other) as elsewhere:
        def to_elsewhere(conn: socket.socket, stop: threading.Event) -> None:
            conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {elsewhere}\r\nContent-Length: 0\r\n\r\n".encode())

        with raw_server(to_elsewhere) as server:
            # `symmtui wait` through the CLI's entry point in this process. Its timeout must outlast several of
            # the probe's answers, which a loaded machine delays: until its TIMED OUT block names a health answer
            # and the probe has asked three times, it is asked again with twice the timeout (up to 8 s). Every
            # run must end without READY, and no probe may reach the other host.
            limit = 0.5
            while True:
                printed = io.StringIO()
                with redirect_stdout(printed):
                    code = cli.main(["wait", "--log", str(log), "--url", server.url, "--timeout", f"{limit:g}",
                                     "--no-record"])
                out = printed.getvalue()
                assert code == 124 and "READY" not in out.replace("TIMED OUT", ""), out
                if ("  health: " in out and len(server.requests) >= 3) or limit >= 8:
                    break
                limit *= 2
    assert f"pointing to {elsewhere}" in out, out
    assert len(server.requests) >= 3 and other.requests == 0


def _wait(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()
