"""`symmtui launch` and `symmtui stop` as a user runs them: real processes, real output and exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from symmtui.judge.rules import PHASE_GRAPHS, PHASE_LOADING, PHASE_ORDER
from symmtui.launch.history import History
from symmtui.verbs.printer import EXIT_CRASHED, EXIT_READY, EXIT_TIMED_OUT
from tests.launch.helpers import demo_config, free_port, run_cli, stop_at_end, write_profile

__all__ = ["stop_at_end"]  # autouse: whatever a failing test launched is stopped


def test_launch_ready_history_and_relaunch_stops_previous(tmp_path: Path) -> None:
    cfg = demo_config(tmp_path)
    first = run_cli("launch", "--config", str(cfg), "--no-preflight", "--no-record")
    assert first.returncode == EXIT_READY, first.stdout + first.stderr
    assert "READY after" in first.stdout
    assert "launched pid" not in first.stdout  # the launcher's own lines go to stderr: stdout is `wait`'s
    assert "launched pid" in first.stderr
    (entry,) = History().entries()
    assert entry.verdict == "ready" and entry.end is not None and entry.end >= entry.start
    # phase times were recorded, in the order they happened
    known = [p for p in entry.phases if p in PHASE_ORDER]
    assert known == sorted(known, key=PHASE_ORDER.index) and len(known) >= 5
    assert {PHASE_LOADING, PHASE_GRAPHS} <= set(entry.phases)
    old_pid = int(first.stderr.split("launched pid ")[1].split(";")[0])
    assert psutil.pid_exists(old_pid)

    second = run_cli("launch", "--config", str(cfg), "--no-preflight", "--no-record")
    assert second.returncode == EXIT_READY, second.stdout + second.stderr
    assert "exited after SIGTERM" in second.stderr
    assert "earlier launches of this command were ready after" in second.stderr
    assert not psutil.pid_exists(old_pid) or psutil.Process(old_pid).status() == psutil.STATUS_ZOMBIE
    assert [e.verdict for e in History().entries()] == ["ready", "ready"]

    stop = run_cli("stop", "--config", str(cfg))
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert stop.stdout.startswith("stopped 1 process(es)")
    again = run_cli("stop", "--config", str(cfg))
    assert again.returncode == 0 and "nothing launched by symmtui is running" in again.stdout


def test_launch_crash_prints_wait_verdict_and_exit_1(tmp_path: Path) -> None:
    cfg = demo_config(tmp_path, "--crash", "keyerror")
    res = run_cli("launch", "--config", str(cfg), "--no-preflight", "--no-record")
    assert res.returncode == EXIT_CRASHED, res.stdout + res.stderr
    assert "CRASHED after" in res.stdout and "KeyError: 12" in res.stdout
    (entry,) = History().entries()
    assert entry.verdict == "crashed" and entry.cause and "KeyError" in entry.cause
    run_cli("stop", "--config", str(cfg))


def test_launch_timeout_exit_124_leaves_server_for_stop(tmp_path: Path) -> None:
    cfg = demo_config(tmp_path, speed=1)
    res = run_cli("launch", "--config", str(cfg), "--no-preflight", "--no-record", "--timeout", "0.5")
    assert res.returncode == EXIT_TIMED_OUT, res.stdout + res.stderr
    assert "TIMED OUT after" in res.stdout
    assert "still running; `symmtui stop` ends them" in res.stderr
    assert History().entries()[0].verdict == "timed_out"
    stop = run_cli("stop", "--config", str(cfg), "--grace", "1")
    assert stop.returncode == 0 and "stopped 1 process(es)" in stop.stdout


def test_stop_reports_stranger_and_kill_pid_needs_that_pid(tmp_path: Path) -> None:
    port = free_port()
    listener = subprocess.Popen(
        [sys.executable, "-c",
         "import socket,sys,time;s=socket.socket();s.bind(('127.0.0.1',int(sys.argv[1])));s.listen();"
         "print('up',flush=True);time.sleep(60)", str(port)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "up"
        cfg = demo_config(tmp_path, port=port)
        res = run_cli("stop", "--config", str(cfg), "--port-timeout", "1")
        assert res.returncode == 3, res.stdout + res.stderr
        assert f"pid {listener.pid}" in res.stdout and f"symmtui stop --kill-pid {listener.pid}" in res.stdout
        assert listener.poll() is None

        launch = run_cli("launch", "--config", str(cfg), "--no-preflight", "--no-record")
        assert launch.returncode == 4 and f"--kill-pid {listener.pid}" in launch.stderr
        assert listener.poll() is None and not (tmp_path / "logs").exists()

        wrong = run_cli("stop", "--config", str(cfg), "--kill-pid", str(listener.pid + 100000))
        assert wrong.returncode == 2 and "does not hold" in wrong.stderr
        assert listener.poll() is None

        ok = run_cli("stop", "--config", str(cfg), "--kill-pid", str(listener.pid), "--grace", "1")
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert f"pid {listener.pid} ended" in ok.stdout
        assert listener.wait(10) is not None
    finally:
        listener.kill()
        listener.wait()


def test_attach_only_profile_launch_explains(tmp_path: Path) -> None:
    cfg = write_profile(tmp_path, log=tmp_path / "server.log")
    res = run_cli("launch", "--config", str(cfg))
    assert res.returncode == 2
    assert res.stderr.startswith("symmtui: error: cannot launch:") and "attach only" in res.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["launch", "--grace", "nan"],
        ["launch", "--timeout", "-1"],
        ["launch", "--stall", "inf"],
        ["stop", "--grace", "inf"],
        ["stop", "--port-timeout", "-1"],
        ["stop", "--gpu-timeout", "nan"],
    ],
)
def test_bad_seconds_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """NaN would skip the grace period and inf would wait forever: both refused before anything runs."""
    from symmtui.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"symmtui: error: argument {argv[1]}: must be a number of seconds")
