"""Port and GPU holders we did not start: reported with pid and command line, signalled only on confirmation."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from symmtui.errors import UserError
from symmtui.launch.report import Progress, Step
from symmtui.launch.supervisor import LaunchBlocked, Supervisor
from symmtui.proc import ports
from tests.launch.helpers import demo_profile, free_port, log_contains, wait_until

LISTENER = (
    "import socket, sys, time\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "print('listening', flush=True); time.sleep(120)\n"
)


@pytest.fixture
def stranger() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A process the test (not symmtui) started, listening on a loopback port."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", LISTENER, str(port), "stranger-marker"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
    yield proc, port
    proc.kill()
    proc.wait()


def test_port_held_by_stranger_is_reported_not_killed(tmp_path: Path, stranger: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = stranger
    sup = Supervisor(demo_profile(tmp_path, "--listen-early", port=port))
    rec = sup.launch()  # the demo server cannot bind: uvicorn's "address already in use", exit 1
    assert sup.wait_exit(30) == 1
    assert "address already in use" in Path(rec.log_path).read_text()
    report = sup.stop()
    assert report.port_free is False and not report.clean
    (s,) = report.strangers
    assert s.pid == proc.pid and "stranger-marker" in s.cmdline and s.holds == (f"port {port}",)
    assert f"pid {proc.pid}" in report.summary()
    assert proc.poll() is None  # not signalled
    assert ports.port_owner(port) is not None and str(proc.pid) in (ports.port_owner(port) or "")


def test_relaunch_blocked_by_stranger_names_the_confirm_command(tmp_path: Path, stranger: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = stranger
    sup = Supervisor(demo_profile(tmp_path, port=port))
    with pytest.raises(LaunchBlocked, match=f"--kill-pid {proc.pid}") as info:
        sup.relaunch(preflight=False)
    assert info.value.report.port_free is False
    assert sup.current() is None  # nothing launched
    assert proc.poll() is None


def test_kill_stranger_needs_the_same_pid_confirmed(tmp_path: Path, stranger: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = stranger
    sup = Supervisor(demo_profile(tmp_path, port=port), grace=1.0)
    with pytest.raises(UserError, match="not confirmed"):
        sup.kill_stranger(proc.pid, proc.pid + 1)
    assert proc.poll() is None
    assert sup.kill_stranger(proc.pid, proc.pid) is True
    assert proc.wait(10) == -15
    assert ports.is_free("127.0.0.1", port)


def test_kill_stranger_refuses_a_pid_that_holds_nothing(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        sup = Supervisor(demo_profile(tmp_path))
        with pytest.raises(UserError, match="does not hold"):
            sup.kill_stranger(bystander.pid, bystander.pid)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


class LaggingGpu:
    """NVML's process list, as the driver shows it: a dead process's memory lingers ``lag`` seconds."""

    def __init__(self, lag: float, extra: set[int] | None = None) -> None:
        self.lag = lag
        self.watch: set[int] = set()
        self.died: dict[int, float] = {}
        self.extra = extra or set()

    def __call__(self) -> set[int]:
        out = set(self.extra)
        now = time.monotonic()
        for pid in self.watch:
            alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            if alive:
                out.add(pid)
            else:
                self.died.setdefault(pid, now)
                if now - self.died[pid] < self.lag:
                    out.add(pid)
        return out


def test_stop_waits_for_gpu_memory_and_reports_gpu_strangers(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        gpu = LaggingGpu(lag=0.4, extra={other.pid})
        sup = Supervisor(demo_profile(tmp_path, "--listen-early"), gpu_pids=gpu)
        rec = sup.launch()
        gpu.watch.add(rec.pid)
        wait_until(log_contains(rec.log_path, "server_args="), what="server started")
        seen: list[Progress] = []
        report = sup.stop(seen.append)
        gpu_steps = [p for p in seen if p.step is Step.GPU]
        assert gpu_steps and gpu_steps[0].remaining == (rec.pid,)
        assert report.gpu_free is True
        assert [s.pid for s in report.strangers] == [other.pid]
        assert report.strangers[0].holds == ("GPU memory",)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_gpu_memory_never_freed_times_out(tmp_path: Path) -> None:
    gpu = LaggingGpu(lag=3600)
    sup = Supervisor(demo_profile(tmp_path, "--listen-early"), gpu_pids=gpu, gpu_timeout=0.5)
    rec = sup.launch()
    gpu.watch.add(rec.pid)
    report = sup.stop()
    assert report.gpu_free is False and not report.clean
    assert "GPU memory not released" in report.summary()


def test_no_nvml_means_gpu_not_checked(tmp_path: Path) -> None:
    sup = Supervisor(demo_profile(tmp_path, "--listen-early"), gpu_pids=lambda: None)
    sup.launch()
    report = sup.stop()
    assert report.gpu_free is None and any("NVML" in n for n in report.notes)
