"""`wait` under a 50k lines/s writer: READY comes while the flood goes on (a real writer process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from .engine_kit import env, symmtui_cmd

STARTUP = (
    "[2026-11-29 09:40:03] server_args=ServerArgs(model_path='/models/M', tp_size=8, port=30000)\n"
    + "".join(f"[2026-11-29 09:40:09 TP{r}] Init torch distributed begin.\n" for r in range(8))
)
READY = "[2026-11-29 09:48:04] The server is fired up and ready to roll!\n"
WRITER = textwrap.dedent('''
    import os, sys, time
    path, ready = sys.argv[1], sys.argv[2].encode()
    rate, before, after = 50_000, 2.0, 60.0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    chunk = rate // 100
    n = 0
    t0 = time.perf_counter()
    sent = False
    while time.perf_counter() - t0 < before + after:
        if not sent and time.perf_counter() - t0 >= before:
            os.write(fd, ready)
            sent = True
            print("ready written", flush=True)
        os.write(fd, "".join(f"[2026-11-29 09:41:00 TP{(n + i) % 8}] INFO: worker step {n + i}\\n"
                             for i in range(chunk)).encode())
        n += chunk
        delay = t0 + n / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
''')


def test_wait_says_ready_during_a_50k_lines_per_second_flood(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(STARTUP)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    writer = subprocess.Popen([sys.executable, str(script), str(log), READY], stdout=subprocess.PIPE, text=True)
    try:
        wait = subprocess.run(symmtui_cmd("wait", "--log", str(log), "--timeout", "55", "--stall", "0",
                                          "--no-record"), capture_output=True, text=True, env=env(), timeout=120)
        flooding = writer.poll() is None  # it writes for 60 s after the ready line
    finally:
        writer.kill()
        out, _ = writer.communicate()
    assert "ready written" in out
    assert wait.returncode == 0, wait.stdout + wait.stderr
    assert any(line.startswith("READY after") for line in wait.stdout.splitlines()), wait.stdout
    assert flooding, "wait returned only after the writer had stopped"
