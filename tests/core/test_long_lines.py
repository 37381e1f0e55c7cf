"""Hostile shapes of a log for `wait`: a 50 MB single line before the ready line, a 2 GB sparse log
(a NUL hole with the ready line at its end). Built for real: a writer process, a real sparse file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import symmtui.bringup.lastrun as lastrun
from symmtui.logs.decode import DEFAULT_MAX_LINE_BYTES
from symmtui.logs.follow import LogFollower, LogLine

from .engine_kit import env, symmtui_cmd
from .follow_kit import Writer

MB = 1 << 20
STARTUP = (
    "[2026-11-29 09:40:03] server_args=ServerArgs(model_path='/models/M', tp_size=8, port=30000)\n"
    "[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n"
)
READY = "[2026-11-29 09:48:04] The server is fired up and ready to roll!\n"
LONG_HEAD = "[2026-11-29 09:41:00 TP0] "


def _wait(log: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(symmtui_cmd("wait", "--log", str(log), "--timeout", "60", "--stall", "0",
                                        "--no-record", *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


def _write_long_line(w: Writer, size: int) -> None:
    w.write(LONG_HEAD)
    piece = "x" * MB
    for _ in range(size // MB):
        w.write(piece)
    w.write("\n")


@pytest.mark.parametrize("when", ["existing", "live"])
def test_a_50_mb_line_before_the_ready_line_gives_ready(tmp_path: Path, when: str) -> None:
    """The backward search for the last launch used to loop for ever on a line longer than its block
    (existing); the follower reads such a line at the same cost per byte as any other (live)."""
    log = tmp_path / "server.log"
    with Writer(log) as w:
        w.write(STARTUP)
        proc = _wait(log) if when == "live" else None
        _write_long_line(w, 50 * MB)
        w.write(READY)
    if proc is None:
        proc = _wait(log)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert any(line.startswith("READY after") for line in out.splitlines()), out


def test_a_long_line_is_cut_at_the_cap_and_marked(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w:
        w.write(STARTUP)
        _write_long_line(w, 8 * MB)
        w.write(READY)
    with LogFollower(log) as f:
        lines: list[LogLine] = []
        while True:
            got = [i for i in f.poll() if isinstance(i, LogLine)]
            lines += got
            if not f.has_more:
                break
    long = [ln for ln in lines if ln.text.startswith(LONG_HEAD)]
    assert len(long) == 1 and long[0].truncated
    assert len(long[0].text.encode()) <= DEFAULT_MAX_LINE_BYTES
    assert lines[-1].text == READY.rstrip("\n") and lines[-1].no == 4


def test_the_backward_search_reads_each_block_once_past_a_long_line(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        fh.write(STARTUP.encode() + LONG_HEAD.encode() + b"x" * (20 * MB) + b"\n" + READY.encode())
    reads: list[int] = []
    real = os.pread

    def counting(fd: int, n: int, off: int) -> bytes:
        reads.append(n)
        return real(fd, n, off)

    monkeypatch.setattr(lastrun.os, "pread", counting)
    fd = os.open(log, os.O_RDONLY)
    try:
        start = lastrun.find_last_launch(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    assert start.offset == 0 and start.found
    assert sum(reads) <= log.stat().st_size + 2 * lastrun.BLOCK


def test_a_2_gb_sparse_log_with_the_ready_line_at_its_end_gives_ready(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        fh.write(STARTUP.encode())
        fh.truncate(2 << 30)
        fh.seek(2 << 30)
        fh.write(b"\n" + READY.encode())
    st = log.stat()
    assert st.st_size > 2 << 30 and st.st_blocks * 512 < 64 * MB, "not sparse here"
    proc = _wait(log)
    out, err = proc.communicate(timeout=150)
    assert proc.returncode == 0, out + err
    assert "READY after" in out and "no launch start in the last" in out, out
