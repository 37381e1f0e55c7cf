"""Security: no shell unless `shell = true`; no signal to a process symmtui did not start; user-only state."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from symmtui import paths
from symmtui.launch import state
from symmtui.launch.history import History, HistoryEntry
from symmtui.launch.profile import load_profile
from symmtui.launch.supervisor import Supervisor
from tests.launch.helpers import demo_argv, free_port, run_cli, wait_until, write_profile
from tests.launch.procguard import no_leftover_processes

__all__ = ["no_leftover_processes"]

INJECT = ["$(touch pwned1)", "; touch pwned2", "`touch pwned3`", "| touch pwned4", "&& touch pwned5"]
ECHO_ARGS = "import json,os,sys; print(json.dumps({'argv': sys.argv[1:], 'env': os.environ.get('PAYLOAD')}))"


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run in a fresh directory; after the test no 'pwned*' file may exist anywhere under it or /tmp."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work
    made = [p for p in (*tmp_path.rglob("pwned*"), *Path("/tmp").glob("pwned*"), *Path.cwd().glob("pwned*"))
            if p.is_file()]
    assert made == [], f"a shell ran: {made}"


def _no_pwned(root: Path) -> None:
    assert [p for p in root.rglob("pwned*") if p.is_file()] == []


def test_command_string_is_not_a_shell_line(tmp_path: Path, sandbox: Path) -> None:
    line = f"{sys.executable} -c \"{ECHO_ARGS}\" " + " ".join(f"'{a}'" for a in INJECT) + " ; touch pwned6"
    cfg = write_profile(sandbox, command=line, log_dir=sandbox / "logs", cwd=sandbox)
    sup = Supervisor(load_profile(cfg))
    rec = sup.launch()
    assert sup.wait_exit(30) == 0
    out = Path(rec.log_path).read_text()
    assert all(a in out for a in INJECT) and '";", "touch", "pwned6"' in out  # passed as literal arguments
    _no_pwned(tmp_path)
    sup.stop()


def test_env_value_and_argv_list_are_literal(tmp_path: Path, sandbox: Path) -> None:
    cfg = write_profile(sandbox, command=[sys.executable, "-c", ECHO_ARGS, *INJECT], log_dir=sandbox / "logs",
                        env={"PAYLOAD": "$(touch pwned7)"})
    sup = Supervisor(load_profile(cfg))
    rec = sup.launch()
    assert sup.wait_exit(30) == 0
    assert '"env": "$(touch pwned7)"' in Path(rec.log_path).read_text()
    _no_pwned(tmp_path)
    sup.stop()


def test_paths_with_shell_syntax_are_just_names(tmp_path: Path, sandbox: Path) -> None:
    odd = sandbox / "logs $(touch pwned8); touch pwned9 `touch pwned10`"
    cwd = sandbox / "cwd; touch pwned11"
    cwd.mkdir()
    cfg = write_profile(sandbox, name="a;touch pwned12.toml", command=[sys.executable, "-c", "print('ok')"],
                        log_dir=odd, cwd=cwd)
    res = run_cli("launch", "--config", str(cfg), "--no-preflight", "--timeout", "5")
    assert odd.is_dir() and (odd / "latest.log").is_symlink()
    assert (odd / "latest.log").read_text() == "ok\n"
    assert res.returncode == 1 and "process exited with code 0 before it was ready" in res.stdout
    _no_pwned(tmp_path)


def test_log_content_never_reaches_a_shell(tmp_path: Path, sandbox: Path) -> None:
    """A server printing shell syntax (and a crash line) is watched, diagnosed and stopped: nothing runs."""
    code = ("print('$(touch pwned13) `touch pwned14`; touch pwned15'); "
            "print('Address already in use port 30000 $(touch pwned16)'); raise SystemExit(1)")
    cfg = write_profile(sandbox, command=[sys.executable, "-c", code], log_dir=sandbox / "logs", timeout=20)
    res = run_cli("launch", "--config", str(cfg), "--no-preflight")
    assert res.returncode == 1 and "CRASHED" in res.stdout
    assert run_cli("stop", "--config", str(cfg)).returncode == 0
    _no_pwned(tmp_path)


def test_shell_true_is_what_enables_a_shell(tmp_path: Path, sandbox: Path) -> None:
    cfg = write_profile(sandbox, command="touch made-by-shell && echo done", shell=True, log_dir=sandbox / "logs",
                        cwd=sandbox)
    sup = Supervisor(load_profile(cfg))
    rec = sup.launch()
    assert sup.wait_exit(30) == 0
    assert (sandbox / "made-by-shell").exists() and Path(rec.log_path).read_text() == "done\n"
    sup.stop()


def test_stop_never_signals_a_process_it_did_not_start(tmp_path: Path) -> None:
    """Strangers on the port and the GPUs, and a pid-reused state file: all reported, none signalled."""
    port = free_port()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket,sys,time;s=socket.socket();s.bind(('127.0.0.1',int(sys.argv[1])));"
         "s.listen();print('up',flush=True);time.sleep(60)", str(port)], stdout=subprocess.PIPE, text=True)
    gpu_user = subprocess.Popen(["sleep", "60"])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "up"
        cfg = write_profile(tmp_path, command=demo_argv("--port", str(port)), log_dir=tmp_path / "logs",
                            url=f"http://127.0.0.1:{port}/health", grace=0.2)
        profile = load_profile(cfg)
        # the state file names gpu_user's pid, but with another start time: a reused pid
        ct = psutil.Process(gpu_user.pid).create_time()
        state.save(state.LaunchRecord("x", profile.key, str(cfg), gpu_user.pid, gpu_user.pid, gpu_user.pid,
                                      ct - 100, 0.0, ("x",), "h", "/nonexistent.log", str(tmp_path), None))
        sup = Supervisor(profile, gpu_pids=lambda: {gpu_user.pid}, port_timeout=0.5, gpu_timeout=0.5)
        report = sup.stop()
        assert report.found == ()
        assert {s.pid for s in report.strangers} == {holder.pid, gpu_user.pid}
        assert holder.poll() is None and gpu_user.poll() is None
        with pytest.raises(Exception, match="not confirmed"):
            sup.kill_stranger(gpu_user.pid, holder.pid)
        assert holder.poll() is None and gpu_user.poll() is None
        with pytest.raises(Exception, match="symmtui itself"):
            sup.kill_stranger(os.getpid(), os.getpid())
    finally:
        for p in (holder, gpu_user):
            p.kill()
            p.wait()


USER_SHELL = (
    "import fcntl, os, subprocess, sys, termios, time\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"  # the pty becomes its terminal, as for a login shell
    "sleeper = [sys.executable, '-c', 'import time; print(\"up\", flush=True); time.sleep(120)']\n"
    "job = subprocess.Popen(sleeper)\n"  # a job of the shell: same terminal
    "detached = subprocess.Popen(sleeper, start_new_session=True)\n"  # `setsid cmd` from the shell: no terminal
    "print(os.getpid(), job.pid, detached.pid, flush=True)\n"
    "time.sleep(120)\n"
)


def test_user_shell_with_the_servers_environment_is_not_signalled(tmp_path: Path) -> None:
    """A shell started from the server's environment inherits SYMMTUI_LAUNCH_ID: it, its job and what it
    detached are still not ours. Only the launch's own processes are stopped."""
    import select

    port = free_port()
    cfg = write_profile(tmp_path, command=demo_argv("--speed", "1", "--port", str(port), "--listen-early"),
                        log_dir=tmp_path / "logs", url=f"http://127.0.0.1:{port}/health", grace=2)
    sup = Supervisor(load_profile(cfg))
    rec = sup.launch()
    # A process's /proc/PID/environ is empty for a moment after its exec is past the point where Popen
    # returns (the new image's environment is set up last): read it only once the child runs its own
    # code. The server shows that by its first log line, each sleeper by its "up".
    wait_until(lambda: Path(rec.log_path).stat().st_size > 0, 30, "the server's first log line")
    server_env = psutil.Process(rec.pid).environ()
    assert server_env.get("SYMMTUI_LAUNCH_ID") == rec.launch_id
    master, slave = os.openpty()
    shell = subprocess.Popen([sys.executable, "-c", USER_SHELL], stdin=slave, stdout=slave, stderr=slave,
                             start_new_session=True, env=server_env)
    os.close(slave)
    pids: list[int] = []
    try:
        out = b""
        # the shell's three pids and both sleepers' "up", in any order: three writers share the pty, so their
        # words can run together ("22665upup"); read numbers and "up"s, not lines
        while len(re.findall(rb"\d+", out)) < 3 or out.count(b"up") < 2:
            assert select.select([master], [], [], 30)[0], f"the user shell did not start: {out!r}"
            out += os.read(master, 1024)
        pids = [int(x) for x in re.findall(rb"\d+", out)]
        assert pids[0] == shell.pid
        for pid in pids:
            assert psutil.Process(pid).environ().get("SYMMTUI_LAUNCH_ID") == rec.launch_id
        report = sup.stop()
        assert [p.pid for p in report.found] == [rec.pid] and report.clean
        for pid in pids:
            assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE, f"pid {pid} was signalled"
    finally:
        for pid in reversed(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shell.kill()
        shell.wait()
        os.close(master)
        sup.stop()


def test_state_directory_and_files_are_user_only(tmp_path: Path) -> None:
    old = os.umask(0)  # even with a permissive umask
    try:
        cfg = write_profile(tmp_path, command=[sys.executable, "-c", "pass"], log_dir=tmp_path / "logs")
        sup = Supervisor(load_profile(cfg))
        rec = sup.launch()
        sup.wait_exit(30)
        History().append(HistoryEntry("l", "h", 0.0, 1.0, "ready"))
        launch_dir = paths.state_dir("launch")
        for d in (launch_dir, launch_dir.parent):
            assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
        for f in launch_dir.iterdir():
            assert stat.S_IMODE(f.stat().st_mode) & 0o077 == 0, f
        assert state.state_path(rec.profile_key).exists()
        sup.stop()
    finally:
        os.umask(old)
