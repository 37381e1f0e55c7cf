"""The process view acts on what is there, not on what it listed: between the listing and the yes, a process
changes owner (a child started as root calls ``os.setuid(65534)``), or exits and stays a zombie (its parent, this
test, does not reap it); pid 1 is never offered. Real child processes, the pynvml stand-in listing them on a GPU,
a real Session's ``SignalProcess`` intent (its tree: the watched pid's), the one identity check of ``proc.identity``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.proc import identity
from symmtui.session.intents import SignalProcess
from symmtui.session.protocol import SessionLike
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.screens.processes import ProcessScreen
from tests.ui.kit import answer, settle, toasts, wait_for, watched

GIB = 1024**3
# waits for a line on stdin, then (as told) drops to uid nobody or exits; it never signals itself
CHILD = ("import os, sys, time\n"
         "what = sys.stdin.readline().strip()\n"
         "if what == 'setuid':\n"
         "    os.setuid(65534)\n"
         "    print('done', flush=True)\n"
         "    time.sleep(120)\n")


def _round(pids: list[int]) -> GpuSnapshot:
    module = load_standin("rtx-pro-6000-x8-pcie")
    host = standin_host(module)
    for gpu, pid in enumerate(pids):
        host.add_process(gpu, pid, (8 - gpu) * GIB)
    nvml = Nvml(module)
    try:
        return GpuSampler(nvml).sample_once()
    finally:
        nvml.shutdown()


class ProcApp(App[None]):
    def __init__(self, snapshot: GpuSnapshot, ours: frozenset[int], session: SessionLike) -> None:
        super().__init__()
        self.snapshot, self.ours, self.session = snapshot, ours, session

    def compose(self) -> ComposeResult:
        yield Static("dashboard")

    def on_mount(self) -> None:
        self.push_screen(ProcessScreen(self.snapshot, self.ours, self.session))


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _state(pid: int) -> str:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return "gone"
    return data[data.rfind(b")") + 2:].split()[0].decode()


def _uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError("no Uid line")


async def _confirm_open(app: ProcApp, pilot: object, pid: int, key: str) -> None:
    """The row of ``pid`` read from /proc (its owner and start time listed), then ``key`` and the question."""
    screen = app.screen
    assert isinstance(screen, ProcessScreen)
    await wait_for(pilot, lambda: any(r.pid == pid and r.host is not None and r.host.uid is not None
                                      for r in screen.shown), "the row's owner read")  # type: ignore[arg-type]
    screen.query_one(DataTable).move_cursor(row=[r.pid for r in screen.shown].index(pid))
    await pilot.press(key)  # type: ignore[attr-defined]
    assert isinstance(app.screen, ConfirmScreen), app.screen


@pytest.mark.skipif(os.geteuid() != 0, reason="a process changes owner only when it starts as root (CI runs as root)")
async def test_a_process_that_changed_owner_after_it_was_listed_is_not_signalled(
        child: subprocess.Popen[bytes]) -> None:
    session = watched(pid=child.pid)
    app = ProcApp(_round([child.pid]), frozenset({child.pid}), session)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            said = toasts(app)
            await _confirm_open(app, pilot, child.pid, "K")
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(b"setuid\n")
            child.stdin.flush()
            assert child.stdout.readline() == b"done\n"  # root's listed process is uid nobody's now
            assert _uid(child.pid) == 65534
            await answer(pilot)
            await wait_for(pilot, lambda: "changed owner" in "\n".join(said), "the refusal")
            assert f"pid {child.pid} changed owner (uid 0 -> 65534): not signalled" in "\n".join(said)
            await settle(pilot)
            assert child.poll() is None  # not SIGKILLed by root's symmtui
    finally:
        session.close()


async def test_a_process_that_exited_after_it_was_listed_is_already_exited_even_as_a_zombie(
        child: subprocess.Popen[bytes]) -> None:
    session = watched(pid=child.pid)
    app = ProcApp(_round([child.pid]), frozenset({child.pid}), session)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            said = toasts(app)
            await _confirm_open(app, pilot, child.pid, "k")
            assert child.stdin is not None
            child.stdin.write(b"exit\n")
            child.stdin.flush()
            deadline = time.monotonic() + 30
            while _state(child.pid) != "Z":  # exited, not reaped: its parent (this test) has not waited
                assert time.monotonic() < deadline, _state(child.pid)
                time.sleep(0.02)
            await answer(pilot)
            await wait_for(pilot, lambda: "already exited" in "\n".join(said), "the answer")
            assert f"pid {child.pid} has already exited: nothing sent" in "\n".join(said)
            assert not any("SIGTERM sent" in t for t in said)
            assert _state(child.pid) == "Z"
    finally:
        session.close()
    assert child.wait(10) == 0  # it exited by itself: no signal reached it


async def test_pid_1_is_never_offered(child: subprocess.Popen[bytes]) -> None:
    if os.stat("/proc/1").st_uid != os.getuid():
        pytest.skip("pid 1 is another user's here: refused as such (test_process_view covers that)")
    session = watched(pid=child.pid)
    app = ProcApp(_round([1, child.pid]), frozenset({child.pid}), session)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            said = toasts(app)
            screen = app.screen
            assert isinstance(screen, ProcessScreen)
            await wait_for(pilot, lambda: any(r.pid == 1 and r.host is not None for r in screen.shown), "pid 1 listed")
            screen.query_one(DataTable).move_cursor(row=[r.pid for r in screen.shown].index(1))
            for key in ("k", "K"):
                await pilot.press(key)
                await wait_for(pilot, lambda: "init process" in "\n".join(said), "the refusal")
                assert not isinstance(app.screen, ConfirmScreen)
    finally:
        session.close()
    # and below the screen: the Session refuses it whatever the caller claims
    listed = identity.Listed(1, 0.0, os.getuid())
    done = session.ask(SignalProcess(listed, signal.SIGTERM, by_pid=True))
    assert done.outcome is identity.Outcome.REFUSED and "init process" in done.text


def test_the_one_check_through_a_pidfd(child: subprocess.Popen[bytes]) -> None:
    """proc.identity.send on its own: another start time is another process; the right one is signalled."""
    now = identity.read_now(child.pid)
    assert now is not None and now.uid == os.getuid()
    wrong = identity.send(identity.Listed(child.pid, now.started - 5.0, now.uid), signal.SIGTERM)
    assert wrong.outcome is identity.Outcome.REPLACED and child.poll() is None
    other = identity.send(identity.Listed(child.pid, now.started, now.uid + 1), signal.SIGTERM)
    assert other.outcome is identity.Outcome.OWNER and child.poll() is None
    done = identity.send(identity.Listed(child.pid, now.started, now.uid), signal.SIGTERM)
    assert done.sent and done.text == f"SIGTERM sent to pid {child.pid}"
    assert child.wait(10) == -signal.SIGTERM
    gone = identity.send(identity.Listed(child.pid, now.started, now.uid), signal.SIGTERM)
    assert gone.outcome in (identity.Outcome.GONE, identity.Outcome.REPLACED)  # (the pid given to another since)
