"""Launcher faults, created for real: each gives a clear message, leaves nothing half-written or running."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from symmtui.errors import UserError
from symmtui.launch import state
from symmtui.launch.profile import load_profile
from symmtui.launch.supervisor import Supervisor
from tests.launch.helpers import (
    demo_argv,
    demo_config,
    free_port,
    log_contains,
    run_cli,
    stop_at_end,
    wait_until,
    write_profile,
)
from tests.launch.procguard import no_leftover_processes

__all__ = ["no_leftover_processes", "stop_at_end"]  # autouse here too: no test leaves a process behind


def _cfg(tmp: Path, *args: str, **server: object) -> Path:
    server.setdefault("grace", 1)
    return demo_config(tmp, *args, **server)


def _nothing_written(tmp_path: Path, cfg: Path) -> None:
    assert state.load(load_profile(cfg).key) is None
    logs = tmp_path / "logs"
    assert not logs.exists() or [p.name for p in logs.iterdir()] == []


def test_server_ignores_sigterm_stop_escalates(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "--ignore-sigterm", "--listen-early")
    sup = Supervisor(load_profile(cfg))
    rec = sup.launch()
    wait_until(log_contains(rec.log_path, "server_args="), what="server up")
    res = run_cli("stop", "--config", str(cfg), "--grace", "0.5")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SIGKILL to 1 process(es) that ignored SIGTERM" in res.stderr
    assert "(1 needed SIGKILL)" in res.stdout
    assert sup.wait_exit(10) == -signal.SIGKILL


def test_server_forks_grandchildren_all_gone_after_stop(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "--grandchildren", "4", "--listen-early")
    rec = Supervisor(load_profile(cfg)).launch()
    wait_until(lambda: Path(rec.log_path).read_text().count("scheduler worker pid") == 4, what="workers")
    workers = [int(line.rsplit("pid ", 1)[1].split()[0])
               for line in Path(rec.log_path).read_text().splitlines() if "scheduler worker pid" in line]
    res = run_cli("stop", "--config", str(cfg))
    assert res.returncode == 0 and "stopped 5 process(es)" in res.stdout
    for w in workers:
        assert not psutil.pid_exists(w) or psutil.Process(w).status() == psutil.STATUS_ZOMBIE


def test_server_exits_instantly(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "--crash", "exit")
    res = run_cli("launch", "--config", str(cfg), "--no-preflight", "--no-record")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "CRASHED after" in res.stdout and "exited with code 3" in res.stdout


def test_command_does_not_exist(tmp_path: Path) -> None:
    cfg = write_profile(tmp_path, command="no-such-server-binary --tp 8", log_dir=tmp_path / "logs")
    res = run_cli("launch", "--config", str(cfg), "--no-preflight")
    assert res.returncode == 2
    assert res.stderr == (f"symmtui: error: server.command: program 'no-such-server-binary' not found on PATH; "
                          f"install it or give its full path in {cfg}\n")
    _nothing_written(tmp_path, cfg)


def test_command_path_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    cfg = write_profile(tmp_path, command=[str(script)], log_dir=tmp_path / "logs")
    with pytest.raises(UserError, match="is not an executable file"):
        Supervisor(load_profile(cfg)).launch()
    _nothing_written(tmp_path, cfg)


def test_exec_failure_after_checks_leaves_nothing(tmp_path: Path) -> None:
    """An executable that the kernel cannot run (bad format): Popen fails; the new log is removed."""
    bad = tmp_path / "server"
    bad.write_bytes(b"\x7fELF-not-really")
    bad.chmod(0o755)
    cfg = write_profile(tmp_path, command=[str(bad)], log_dir=tmp_path / "logs")
    with pytest.raises(UserError, match="cannot start"):
        Supervisor(load_profile(cfg)).launch()
    _nothing_written(tmp_path, cfg)


def test_log_dir_not_writable(tmp_path: Path) -> None:
    """As root chmod does not stop writes, so the log dir sits under a regular file: mkdir really fails."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file")
    cfg = _cfg(tmp_path, log_dir=blocker / "logs")
    res = run_cli("launch", "--config", str(cfg), "--no-preflight")
    assert res.returncode == 2
    assert f"log directory {blocker / 'logs'} cannot be created (a file is in the way)" in res.stderr
    assert res.stderr.count("\n") == 1
    assert blocker.read_text() == "a file"
    assert state.load(load_profile(cfg).key) is None


def test_latest_log_regular_file_is_not_replaced(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "latest.log").write_text("the user's own notes")
    cfg = _cfg(tmp_path)
    with pytest.raises(UserError, match="is not symmtui.s link"):
        Supervisor(load_profile(cfg)).launch()
    assert (logs / "latest.log").read_text() == "the user's own notes"
    assert [p.name for p in logs.iterdir()] == ["latest.log"]


def test_port_held_by_stranger_launch_refused(tmp_path: Path) -> None:
    port = free_port()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket,sys,time;s=socket.socket();s.bind(('127.0.0.1',int(sys.argv[1])));"
         "s.listen();print('up',flush=True);time.sleep(60)", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "up"
        cfg = write_profile(tmp_path, command=demo_argv("--port", str(port)), log_dir=tmp_path / "logs",
                            url=f"http://127.0.0.1:{port}/health")
        res = run_cli("launch", "--config", str(cfg), "--no-preflight")
        assert res.returncode == 4
        assert f"the port is still held (pid {holder.pid}" in res.stderr
        assert holder.poll() is None
        _nothing_written(tmp_path, cfg)
    finally:
        holder.kill()
        holder.wait()


def test_symmtui_killed_mid_launch_restart_finds_it(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "--listen-early", speed=6)  # loading takes ~10 s: symmtui is killed mid-launch
    cli = subprocess.Popen([sys.executable, "-m", "symmtui", "launch", "--config", str(cfg), "--no-preflight",
                            "--no-record"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    key = load_profile(cfg).key
    wait_until(lambda: state.load(key) is not None, what="state file")
    rec = state.load(key)
    assert rec is not None
    wait_until(log_contains(rec.log_path, "Init torch distributed begin"), what="server loading")
    cli.send_signal(signal.SIGKILL)  # symmtui dies mid-launch; the server (own session) lives on
    cli.wait()
    sup = Supervisor(load_profile(cfg))
    assert sup.current() == rec and sup.is_alive()
    res = run_cli("stop", "--config", str(cfg))
    assert res.returncode == 0 and "stopped 1 process(es)" in res.stdout, res.stdout + res.stderr
    assert not sup.is_alive(rec) and sup.current() is None


def test_corrupt_state_file_is_reported_and_kept(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    path = state.state_path(load_profile(cfg).key)
    path.write_text('{"pid": 12')
    res = run_cli("stop", "--config", str(cfg))
    assert res.returncode == 2 and "is corrupt" in res.stderr and "delete the file" in res.stderr
    assert path.read_text() == '{"pid": 12'


def test_concurrent_launch_of_same_profile_refused(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    profile = load_profile(cfg)
    lock = state.state_path(profile.key).with_suffix(".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another symmtui is mid-launch
        res = run_cli("launch", "--config", str(cfg), "--no-preflight")
        assert res.returncode == 4 and "another symmtui is launching or stopping this profile" in res.stderr
        _nothing_written(tmp_path, cfg)
    finally:
        os.close(fd)


def test_state_file_written_atomically(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "--listen-early")
    sup = Supervisor(load_profile(cfg))
    rec = sup.launch()
    path = state.state_path(rec.profile_key)
    assert json.loads(path.read_text())["pid"] == rec.pid
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
    sup.stop()



def test_state_write_failure_keeps_the_previous_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills while the state is rewritten: the previous state file is intact, no temp file is left."""
    import errno

    from msgspec.structs import replace

    key = load_profile(_cfg(tmp_path)).key
    old = state.LaunchRecord("old", key, "p", 101, 101, 101, 1.0, 1.0, ("x",), "h", "/l.log", "/", None)
    state.save(old)

    def disk_full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m, pytest.raises(UserError, match="cannot write launch state .*No space left"):
        m.setattr(os, "fsync", disk_full)
        state.save(replace(old, launch_id="new", pid=202))
    assert state.load(key) == old
    assert [p.name for p in state.launch_dir().iterdir() if p.name.endswith(".tmp")] == []
