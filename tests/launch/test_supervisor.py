"""Supervisor with real child processes: the demo server launched, crashed, stopped, escalated."""

from __future__ import annotations

import os
import signal
import sys
import threading
import urllib.request
from pathlib import Path

import psutil
import pytest

from symmtui.errors import UserError
from symmtui.launch import state
from symmtui.launch.history import History
from symmtui.launch.profile import load_profile
from symmtui.launch.report import Progress, Step
from symmtui.launch.supervisor import Supervisor
from symmtui.proc import proctree
from tests.launch.helpers import demo_profile, log_contains, wait_until, write_profile


def _health(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_launch_ready_then_stop(tmp_path: Path) -> None:
    profile = demo_profile(tmp_path)
    sup = Supervisor(profile)
    rec = sup.launch()
    assert rec.pid > 0 and rec.pgid == rec.pid and rec.sid == rec.pid
    assert Path(rec.log_path).parent == tmp_path / "logs"
    latest = tmp_path / "logs" / "latest.log"
    assert latest.is_symlink() and latest.resolve() == Path(rec.log_path).resolve()
    wait_until(log_contains(rec.log_path, "The server is fired up and ready to roll!"), what="ready line")
    assert profile.url is not None
    assert _health(profile.url) == 200
    # the state file names exactly this process, so a later symmtui finds it
    assert Supervisor(profile).current() == rec
    seen: list[Progress] = []
    report = sup.stop(seen.append)
    assert report.clean and report.port_free is True
    assert [p.pid for p in report.found] == [rec.pid]
    assert not proctree.is_same(rec.pid, rec.create_time)
    assert sup.current() is None
    assert seen[0].step is Step.SCAN and seen[-1].step is Step.DONE
    assert all(isinstance(p, Progress) for p in seen)
    # a stop before any outcome was recorded leaves a "stopped" history line
    (entry,) = History().entries()
    assert entry.launch_id == rec.launch_id and entry.verdict == "stopped"


def test_each_launch_gets_a_new_log_and_latest_follows(tmp_path: Path) -> None:
    profile = demo_profile(tmp_path, "--crash", "exit")
    sup = Supervisor(profile)
    first = sup.launch()
    assert sup.wait_exit(30) == 3
    second = sup.launch()
    assert sup.wait_exit(30) == 3
    assert first.log_path != second.log_path
    assert Path(first.log_path).exists() and Path(second.log_path).exists()
    assert (tmp_path / "logs" / "latest.log").resolve() == Path(second.log_path).resolve()
    sup.stop()


def test_crash_with_traceback_exit_status_kept(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--crash", "keyerror"))
    rec = sup.launch()
    assert sup.wait_exit(30) == 1
    text = Path(rec.log_path).read_text()
    assert text.count("KeyError: 12") == 2  # --tp 2: one traceback per rank
    assert "Received sigquit from a child process" in text
    assert sup.returncode() == 1
    report = sup.stop()
    assert report.found == () and report.clean


def test_crash_without_traceback_exit_by_signal(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--crash", "segfault"))
    rec = sup.launch()
    assert sup.wait_exit(30) == -signal.SIGSEGV
    text = Path(rec.log_path).read_text()
    assert "Traceback" not in text and "Loading safetensors checkpoint shards" in text
    sup.stop()


def test_server_ignoring_sigterm_is_killed_after_grace(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--ignore-sigterm", "--listen-early"), grace=0.5)
    rec = sup.launch()
    wait_until(log_contains(rec.log_path, "Init torch distributed begin"), what="server started")
    steps: list[Step] = []
    report = sup.stop(lambda p: steps.append(p.step))
    assert report.killed == (rec.pid,)
    assert Step.TERM in steps and Step.KILL in steps
    assert report.clean and report.port_free is True
    assert sup.returncode() == -signal.SIGKILL


def test_grandchildren_that_setsid_are_all_gone(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--grandchildren", "3", "--ignore-sigterm"), grace=0.5)
    rec = sup.launch()
    wait_until(lambda: Path(rec.log_path).read_text().count("scheduler worker pid") == 3, what="workers")
    workers = [int(line.rsplit("pid ", 1)[1].split()[0])
               for line in Path(rec.log_path).read_text().splitlines() if "scheduler worker pid" in line]
    for w in workers:
        assert os.getsid(w) == w != rec.sid  # left our session
    report = sup.stop()
    assert {p.pid for p in report.found} == {rec.pid, *workers}
    for w in workers:
        assert not psutil.pid_exists(w) or psutil.Process(w).status() == psutil.STATUS_ZOMBIE


def test_orphaned_setsid_workers_found_after_leader_died(tmp_path: Path) -> None:
    """The leader crashed; its setsid workers were reparented: neither tree nor session finds them."""
    sup = Supervisor(demo_profile(tmp_path, "--grandchildren", "2", "--crash", "keyerror"), grace=0.5)
    rec = sup.launch()
    assert sup.wait_exit(30) == 1
    workers = [int(line.rsplit("pid ", 1)[1].split()[0])
               for line in Path(rec.log_path).read_text().splitlines() if "scheduler worker pid" in line]
    assert len(workers) == 2
    assert all(psutil.Process(w).ppid() != rec.pid for w in workers)
    with pytest.raises(UserError, match="still running"):  # the orphans still hold what a new launch needs
        sup.launch()
    report = sup.stop()
    assert {p.pid for p in report.found} == set(workers)
    assert {p.why for p in report.found} == {"marker"}


def test_restarted_symmtui_finds_what_it_launched(tmp_path: Path) -> None:
    profile = demo_profile(tmp_path, "--listen-early")
    first = Supervisor(profile)
    rec = first.launch()
    # a new Supervisor (a restarted symmtui / dashboard) knows only the state file
    again = Supervisor(load_profile(profile.path))
    assert again.current() == rec and again.is_alive()
    report = again.stop()
    assert [p.pid for p in report.found] == [rec.pid] and report.clean


def test_launch_refused_while_previous_runs(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--listen-early"))
    rec = sup.launch()
    with pytest.raises(UserError, match=f"still running \\(pid {rec.pid}\\)"):
        sup.launch()
    sup.stop()


def test_server_exits_instantly(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--crash", "exit"))
    rec = sup.launch()
    assert sup.wait_exit(30) == 3
    assert Path(rec.log_path).read_text() == ""
    assert not sup.is_alive()
    assert sup.stop().clean


def test_stop_from_worker_thread_reports_progress(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--ignore-sigterm", "--listen-early"), grace=0.3)
    rec = sup.launch()
    wait_until(log_contains(rec.log_path, "server_args="), what="server started (SIGTERM ignored)")
    got: list[Progress] = []
    t = threading.Thread(target=lambda: got.append(sup.stop(got.append)))  # type: ignore[func-returns-value]
    t.start()
    t.join(30)
    assert not t.is_alive()
    steps = [p.step for p in got if isinstance(p, Progress)]
    assert steps[0] is Step.SCAN and Step.KILL in steps and steps[-1] is Step.DONE


def test_pid_reuse_is_never_signalled(tmp_path: Path) -> None:
    """A state file whose pid now names another process (different start time) signals nothing."""
    victim = psutil.Popen(["sleep", "30"])
    try:
        profile = demo_profile(tmp_path)
        ct = victim.create_time()
        rec = state.LaunchRecord("id", profile.key, str(profile.path), victim.pid, victim.pid, victim.pid,
                                 ct - 5.0, 0.0, ("x",), "h", str(tmp_path / "x.log"), str(tmp_path), None)
        state.save(rec)
        report = Supervisor(profile).stop()
        assert report.found == ()
        assert victim.is_running() and victim.status() != psutil.STATUS_ZOMBIE
    finally:
        victim.kill()
        victim.wait()


def test_attach_only_profile_cannot_launch(tmp_path: Path) -> None:
    profile = load_profile(write_profile(tmp_path, log=tmp_path / "server.log"))
    assert profile.attach_only
    with pytest.raises(UserError, match="no server.command"):
        Supervisor(profile).launch()
    with pytest.raises(UserError, match="relaunch unavailable.*attach only"):
        Supervisor(profile).relaunch()


def test_relaunch_with_broken_command_keeps_running_server(tmp_path: Path) -> None:
    profile = demo_profile(tmp_path, "--listen-early")
    sup = Supervisor(profile)
    rec = sup.launch()
    assert profile.path is not None
    broken = profile.path.read_text().replace(f'"{sys.executable}"', '"/nonexistent/python"')
    profile.path.write_text(broken)
    with pytest.raises(UserError, match="does not exist"):
        Supervisor(load_profile(profile.path)).relaunch(preflight=False)
    assert proctree.is_same(rec.pid, rec.create_time)  # the running server was not stopped
    sup.stop()


def test_relaunch_stops_then_launches_with_progress(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--listen-early"))
    old = sup.launch()
    steps: list[Step] = []
    result = sup.relaunch(lambda p: steps.append(p.step), preflight=True, capability=None)
    assert [p.pid for p in result.stop.found] == [old.pid]
    assert result.record.launch_id != old.launch_id and sup.current() == result.record
    assert steps.index(Step.PREFLIGHT) < steps.index(Step.SCAN) < steps.index(Step.LAUNCH)  # checks before stopping
    assert any("capability unknown" in w for w in result.warnings)
    sup.stop()


def test_shell_true_whole_tree_stopped(tmp_path: Path) -> None:
    """shell = true: /bin/sh runs the server in the background and waits; stop ends shell and server."""
    from tests.launch.helpers import demo_argv, free_port

    port = free_port()
    line = " ".join(demo_argv("--speed", "1", "--port", str(port), "--listen-early")) + " & wait"
    cfg = write_profile(tmp_path, command=line, shell=True, log_dir=tmp_path / "logs",
                        url=f"http://127.0.0.1:{port}/health", grace=2)
    sup = Supervisor(load_profile(cfg))
    rec = sup.launch()
    assert rec.argv[:2] == ("/bin/sh", "-c")
    wait_until(log_contains(rec.log_path, "server_args="), what="server up")
    report = sup.stop()
    assert len(report.found) == 2 and report.clean and report.port_free is True
