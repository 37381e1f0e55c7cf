"""A metrics client that resets the connection mid-request (real `wait --metrics-port`, real sockets):
nothing on `wait`'s stderr, and the endpoint still answers."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.launch.helpers import free_port


def _reset(port: int, payload: bytes, read_first: bool = False) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(payload)
        if read_first:
            s.recv(1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST


def test_a_client_that_resets_mid_request_prints_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:16] server_args=ServerArgs(model_path='m', tp_size=2)\n")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--timeout", "120",
                             "--stall", "0", "--no-record", "--metrics-port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/metrics", timeout=2).read()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        for _ in range(10):
            _reset(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # mid-headers
            _reset(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")  # before the answer is written
            _reset(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", read_first=True)  # mid-answer
        time.sleep(0.5)
        with urllib.request.urlopen(base + "/metrics", timeout=5) as answer:
            assert answer.status == 200 and b"symmtui" in answer.read()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "ConnectionResetError" not in err and "Exception occurred" not in err, err
