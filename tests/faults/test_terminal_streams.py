"""The dashboard's terminal check looks at the streams Textual uses: it reads keys from standard input and
draws on standard error. A real child on a real pty: `symmtui --log x 2>file` is refused (it would draw
the screen into the file), `symmtui --log x >file` runs (the screen is on the terminal, the file empty)."""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.faults.hostile_kit import ROOT, run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _pty() -> tuple[int, int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    return master, slave


def _spawn(args: list[str], *, stdin: int, stdout: int, stderr: int, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
    env.pop("TEXTUAL_DRIVER", None)
    return subprocess.Popen([sys.executable, "-m", "symmtui", *args], stdin=stdin, stdout=stdout, stderr=stderr,
                            cwd=cwd, env=env, start_new_session=True)


def _read_until(master: int, needle: bytes, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while needle not in out:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} not drawn in {timeout} s: {out[-2000:]!r}"
        if select.select([master], [], [], min(left, 0.5))[0]:
            try:
                out += os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
    return out


def test_standard_error_into_a_file_is_refused_before_drawing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    shutil.copy(FIXTURES / "sglang-tp8-ready.log", log)
    master, slave = _pty()
    err = tmp_path / "err.txt"
    try:
        with open(err, "wb") as fh:
            proc = _spawn(["--log", str(log), "--no-record"], stdin=slave, stdout=slave, stderr=fh.fileno(), cwd=tmp_path)
            assert proc.wait(timeout=60) == 2
    finally:
        os.close(slave)
        os.close(master)
    text = err.read_bytes()
    assert b"\x1b" not in text, text[:300]  # no screen drawn into the file
    assert text.decode().splitlines() == [
        "symmtui: error: the dashboard needs a terminal (standard error is not one): run it in a terminal, "
        "or use `symmtui wait` / `symmtui scan` in scripts"]


def test_standard_output_into_a_file_still_runs_the_dashboard(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    shutil.copy(FIXTURES / "sglang-tp8-ready.log", log)
    master, slave = _pty()
    out = tmp_path / "out.txt"
    try:
        with open(out, "wb") as fh:
            proc = _spawn(["--log", str(log), "--no-record"], stdin=slave, stdout=fh.fileno(), stderr=slave, cwd=tmp_path)
            try:
                screen = _read_until(master, b"READY", 60)  # drawn on the terminal (standard error)
                os.write(master, b"q")
                deadline = time.monotonic() + 30
                while proc.poll() is None and time.monotonic() < deadline:  # drain: a full pty blocks the app
                    if select.select([master], [], [], 0.2)[0]:
                        try:
                            os.read(master, 65536)
                        except OSError:
                            break
                assert proc.wait(timeout=5) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    finally:
        os.close(slave)
        os.close(master)
    assert b"\x1b[" in screen
    assert b"\x1b" not in out.read_bytes()  # nothing of the screen went to the file


def test_the_demo_and_replay_check_the_same_streams(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    shutil.copy(FIXTURES / "sglang-tp8-ready.log", log)
    bundle = tmp_path / "b.symmtui-bundle.json.gz"
    assert run_cli("wait", "--log", str(log), "--bundle", str(bundle), timeout=60).returncode == 0
    master, slave = _pty()
    try:
        for args, what in ((["demo", "--speed", "10", "--no-record"], "the demo"), (["replay", str(bundle)], "the replay")):
            r = _spawn(args, stdin=slave, stdout=slave, stderr=subprocess.PIPE, cwd=tmp_path)
            _out, err = r.communicate(timeout=60)
            assert r.returncode == 2 and f"{what} needs a terminal (standard error is not one)".encode() in err, err
            assert b"\x1b" not in err
    finally:
        os.close(slave)
        os.close(master)
