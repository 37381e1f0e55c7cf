"""A pid is a process; one `launch` per profile; `stop` during a launch's wait is STOPPED. Real processes only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from symmtui.bringup.engine import Bringup
from symmtui.judge.readiness import ReadinessConfig, State
from symmtui.launch import state
from symmtui.launch.history import history_path
from symmtui.launch.profile import load_profile
from symmtui.proc.pidwatch import ProcRef
from tests.launch.helpers import demo_config, run_cli, stop_at_end, wait_until
from tests.launch.procguard import no_leftover_processes

__all__ = ["no_leftover_processes", "stop_at_end"]

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _cli_popen(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "symmtui", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def _slow_profile(tmp_path: Path) -> Path:
    """A demo server that takes minutes to be ready (so a launch is still waiting on it)."""
    return demo_config(tmp_path, speed=1.0, grace=2, timeout=120)


def _history_lines() -> list[dict[str, object]]:
    try:
        text = history_path().read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _launched(key: str) -> state.LaunchRecord:
    """The first launch's record, once its state file is written."""
    wait_until(lambda: state.load(key) is not None, what="the first launch's state file")
    rec = state.load(key)
    assert rec is not None
    return rec


def _tree(tmp_path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tmp_path)): (p.read_bytes() if p.is_file() else b"")
            for p in sorted((tmp_path / "logs").rglob("*")) if not p.is_symlink()}


def test_stop_during_a_launch_wait_is_stopped_with_one_history_entry(tmp_path: Path) -> None:
    cfg = _slow_profile(tmp_path)
    key = load_profile(cfg).key
    first = _cli_popen("launch", "--config", str(cfg), "--no-preflight", "--no-record")
    try:
        rec = _launched(key)
        stop = run_cli("stop", "--config", str(cfg), "--grace", "2", "--port-timeout", "2")
        assert stop.returncode == 0, stop.stderr
        out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert "STOPPED" in out, out + err
    assert "CRASHED" not in out and "OOM" not in out and "native crash" not in out
    assert first.returncode != 0
    mine = [e for e in _history_lines() if e["launch_id"] == rec.launch_id]
    assert len(mine) == 1 and mine[0]["verdict"] == "stopped", _history_lines()


def test_a_second_launch_while_the_first_waits_exits_4_and_touches_nothing(tmp_path: Path) -> None:
    cfg = _slow_profile(tmp_path)
    key = load_profile(cfg).key
    first = _cli_popen("launch", "--config", str(cfg), "--no-preflight")
    try:
        rec = _launched(key)
        before_state, before_logs, before_hist = state.state_path(key).read_bytes(), _tree(tmp_path), _history_lines()
        second = run_cli("launch", "--config", str(cfg), "--no-preflight")
        assert second.returncode == 4, second.stdout + second.stderr
        lines = second.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("symmtui: error: another `symmtui launch` of this profile")
        assert f"(pid {first.pid})" in lines[0] and "symmtui stop" in lines[0]
        assert state.state_path(key).read_bytes() == before_state and _history_lines() == before_hist
        assert _tree(tmp_path).keys() == before_logs.keys()  # no new log file; the server was not stopped
        assert os.kill(rec.pid, 0) is None and first.poll() is None
    finally:
        run_cli("stop", "--config", str(cfg), "--grace", "2", "--port-timeout", "2")
        first.communicate(timeout=60)


def test_two_launches_started_together_launch_one_server(tmp_path: Path) -> None:
    cfg = _slow_profile(tmp_path)
    key = load_profile(cfg).key
    procs = [_cli_popen("launch", "--config", str(cfg), "--no-preflight", "--no-record") for _ in range(2)]
    try:
        wait_until(lambda: any(p.poll() is not None for p in procs), timeout=60, what="one launch to give up")
        loser = next(p for p in procs if p.poll() is not None)
        _, err = loser.communicate()
        assert loser.returncode == 4 and "another" in err, err
        wait_until(lambda: state.load(key) is not None, what="the winner's launch")
        time.sleep(1.0)
        assert [p.poll() for p in procs if p is not loser] == [None]  # the winner still waits on its server
        logs = [p for p in (tmp_path / "logs").glob("*.log") if not p.is_symlink()]
        assert len(logs) == 1  # one server was launched, never two, never one stopped by the other
    finally:
        run_cli("stop", "--config", str(cfg), "--grace", "2", "--port-timeout", "2")
        for p in procs:
            if p.poll() is None:
                p.communicate(timeout=60)


def _spawn_at(pid: int, tries: int = 200) -> subprocess.Popen[bytes] | None:
    """A new process that gets ``pid`` (the pid of a process that is gone), via ns_last_pid (root only)."""
    for _ in range(tries):
        try:
            NS_LAST_PID.write_text(str(pid - 1))
        except OSError:
            return None
        proc = subprocess.Popen(["sleep", "60"])
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


def _reusable() -> bool:
    return os.geteuid() == 0 and os.access(NS_LAST_PID, os.W_OK)


@pytest.mark.skipif(not _reusable(), reason="making a pid be reused needs root (writes /proc/sys/kernel/ns_last_pid)")
def test_a_reused_pid_is_not_the_process() -> None:
    victim = subprocess.Popen(["sleep", "60"])
    ref = ProcRef.open(victim.pid)
    try:
        assert ref.status() == (True, None)
        victim.kill()
        victim.wait()  # reaped: the pid is free
        impostor = _spawn_at(victim.pid)
        assert impostor is not None, "could not get the pid reused"
        try:
            assert ref.status() == (False, None)  # that pid is alive, but it is not our process
            done: list[int | None] = []
            ref.watch(threading.Event(), done.append)
            assert done == [None]
        finally:
            impostor.kill()
            impostor.wait()
    finally:
        ref.close()


@pytest.mark.skipif(not _reusable(), reason="making a pid be reused needs root (writes /proc/sys/kernel/ns_last_pid)")
def test_wait_pid_sees_the_exit_even_when_the_pid_is_reused_meanwhile(tmp_path: Path) -> None:
    """`wait --pid` is frozen (SIGSTOP) while its server dies and the pid goes to a new process: CRASHED."""
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n")
    server = subprocess.Popen(["sleep", "60"])
    waiter = _cli_popen("wait", "--log", str(log), "--pid", str(server.pid), "--timeout", "60")
    impostor = None
    try:
        assert waiter.stdout is not None
        first = waiter.stdout.readline()  # its engine runs (the pid watch starts with it) ...
        assert first, waiter.stderr.read() if waiter.stderr else ""
        time.sleep(0.5)  # ... and has opened the pid
        waiter.send_signal(signal.SIGSTOP)
        server.kill()
        server.wait()
        impostor = _spawn_at(server.pid)
        assert impostor is not None, "could not get the pid reused"
        waiter.send_signal(signal.SIGCONT)
        out, err = waiter.communicate(timeout=30)
        out = first + out
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
        if impostor is not None:
            impostor.kill()
            impostor.wait()
    assert waiter.returncode == 1 and "CRASHED" in out, out + err


def _proc_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (R, S, T for stopped, Z...)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_a_stopped_and_continued_server_keeps_its_verdict(tmp_path: Path) -> None:
    """SIGSTOP then SIGCONT of the watched server: still starting, then READY on its own log line."""
    log = tmp_path / "server.log"
    go = tmp_path / "go"
    code = (
        "import pathlib, sys, time\n"
        "log, go = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])\n"
        "with log.open('a') as f:\n"
        "    f.write('[2026-11-29 09:40:09 TP0] Init torch distributed begin.\\n'); f.flush()\n"
        "    while not go.exists(): time.sleep(0.05)\n"
        "    f.write('[2026-11-29 09:48:04] The server is fired up and ready to roll!\\n'); f.flush()\n"
        "    time.sleep(60)\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code, str(log), str(go)])
    engine = Bringup(log, pid=server.pid, config=ReadinessConfig(timeout=60))
    engine.start()
    try:
        wait_until(lambda: engine.snapshot().state is State.STARTING, what="the first log line read")
        server.send_signal(signal.SIGSTOP)
        wait_until(lambda: _proc_state(server.pid) == "T", what="the server stopped")
        time.sleep(0.6)  # three of the pid watcher's 0.2 s looks at a stopped process
        assert engine.snapshot().state is State.STARTING
        server.send_signal(signal.SIGCONT)
        wait_until(lambda: _proc_state(server.pid) != "T", what="the server continued")
        time.sleep(0.3)
        assert engine.snapshot().state is State.STARTING
        go.touch()
        snap = engine.wait_final(30)
        assert snap.state is State.READY
    finally:
        engine.stop()
        server.kill()
        server.wait()


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-tp8-symm-mem-keyerror.log"

# Prints the fixture's first 9 lines (server args, init), then waits; on SIGTERM it prints the
# fixture's crash tracebacks (as a server's children would while the group is torn down) and exits 1.
DIES_LOUDLY = (
    "import signal, sys, time\n"
    "lines = open(sys.argv[1]).read().splitlines(keepends=True)\n"
    "sys.stdout.write(''.join(lines[:9])); sys.stdout.flush()\n"
    "def on_term(*_):\n"
    "    sys.stdout.write(''.join(lines[9:])); sys.stdout.flush(); sys.exit(1)\n"
    "signal.signal(signal.SIGTERM, on_term)\n"
    "while True: time.sleep(0.1)\n"
)


def test_crash_lines_printed_while_being_stopped_are_still_stopped(tmp_path: Path) -> None:
    from tests.launch.helpers import write_profile

    cfg = write_profile(tmp_path, command=[sys.executable, "-c", DIES_LOUDLY, str(FIXTURE)],
                        log_dir=tmp_path / "logs", grace=5, timeout=120)
    key = load_profile(cfg).key
    first = _cli_popen("launch", "--config", str(cfg), "--no-preflight", "--no-record")
    try:
        rec = _launched(key)
        wait_until(lambda: "Init torch distributed begin" in Path(rec.log_path).read_text(), what="the first lines")
        assert run_cli("stop", "--config", str(cfg), "--grace", "5", "--port-timeout", "1").returncode == 0
        out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert "KeyError: 12" in Path(rec.log_path).read_text()  # the server did print its crash
    assert "STOPPED" in out and "CRASHED" not in out, out + err
    mine = [e for e in _history_lines() if e["launch_id"] == rec.launch_id]
    assert [e["verdict"] for e in mine] == ["stopped"]


def test_a_launch_killed_mid_wait_does_not_hold_the_profile(tmp_path: Path) -> None:
    """The lock dies with its holder (and its server never inherits it): the next launch goes ahead."""
    cfg = _slow_profile(tmp_path)
    key = load_profile(cfg).key
    first = _cli_popen("launch", "--config", str(cfg), "--no-preflight", "--no-record")
    try:
        old = _launched(key)
        first.kill()
        first.communicate()
        again = run_cli("launch", "--config", str(cfg), "--no-preflight", "--no-record", "--timeout", "0.5")
        assert again.returncode == 124, again.stdout + again.stderr  # it stopped the old server, launched, waited
        new = state.load(key)
        assert new is not None and new.launch_id != old.launch_id
    finally:
        run_cli("stop", "--config", str(cfg), "--grace", "2", "--port-timeout", "2")
