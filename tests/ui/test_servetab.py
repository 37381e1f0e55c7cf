"""`symmtui serve`'s Tab on a real demo dashboard process: a tab gone while the dashboard starts.

textual-serve's in-band "quit", sent behind a resize before the app is mounted, left the dashboard in
a redraw loop for good (75-99 % of a core, deaf to SIGTERM): the Tab hangs it up instead, once it
handles SIGHUP, and it stops its demo server and removes its temp dir by itself (exit 129, not killed).
A hang-up while the process is being spawned waits for it; a dashboard SIGKILLed takes its demo server along.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from symmtui.verbs.serve import child_env
from symmtui.verbs.servetab import QUIT_GRACE, Tab, catches, parse_message


def _env(tmp: Path) -> dict[str, str]:
    (tmp / "tmp").mkdir()
    return {**child_env(), "XDG_STATE_HOME": str(tmp / "state"), "TMPDIR": str(tmp / "tmp")}


@pytest.mark.parametrize("after", [0.0, 0.4], ids=["at-once", "while-starting"])
def test_a_tab_gone_while_its_dashboard_starts_leaves_nothing(tmp_path: Path, after: float) -> None:
    sent: list[bytes] = []

    async def page_gone() -> tuple[Tab, float, list[int]]:
        async def send(data: bytes | str) -> None:
            sent.append(data if isinstance(data, bytes) else data.encode())

        async def close() -> None:
            return None

        tab = Tab([sys.executable, "-m", "symmtui", "demo", "--speed", "0.1", "--no-record"], _env(tmp_path),
                  send, send, close)
        await tab.start(133, 36)
        await tab.feed("resize", (133, 44))  # the page's fitted size differs from the first one
        await tab.feed("stdin", "x")
        await asyncio.sleep(after)
        assert tab.proc is not None
        servers = [c.pid for c in psutil.Process(tab.proc.pid).children(recursive=True)]
        loop = asyncio.get_running_loop()
        started = loop.time()
        await tab.hang_up()
        return tab, loop.time() - started, servers

    tab, took, servers = asyncio.run(page_gone())
    assert tab.proc is not None and tab.proc.returncode == 129, (tab.proc.returncode, bytes(tab.stderr)[-2000:])
    assert took < QUIT_GRACE
    assert list((tmp_path / "tmp").glob("symmtui-demo-*")) == []  # the dashboard removed it itself
    assert not [p for p in servers if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert tab.failure() is None


DEMO = [sys.executable, "-m", "symmtui", "demo", "--speed", "0.1", "--no-record"]


def _ours(tmp: Path) -> list[psutil.Process]:
    """Live processes started with this test's TMPDIR (the dashboard, its demo server)."""
    out = []
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if p.environ().get("TMPDIR") == str(tmp / "tmp") and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
    return out


def _kill_all(tmp: Path) -> None:
    for p in _ours(tmp):
        with contextlib.suppress(psutil.Error):
            p.kill()


async def _nothing_to_page(_data: bytes | str) -> None:
    return None


async def _no_close() -> None:
    return None


def test_a_hang_up_while_the_dashboard_is_being_spawned_waits_for_it(tmp_path: Path) -> None:
    """serve stopped (or the tab closed) while the tab's process ran but ``start`` had not returned (its pipes
    being connected): the hang-up saw no process and returned, and that dashboard and its demo server ran on,
    unwatched (serve exited 0 with them running)."""
    async def hang_up_mid_start() -> tuple[Tab, int | None]:
        tab = Tab(DEMO, _env(tmp_path), _nothing_to_page, _nothing_to_page, _no_close)
        starting = asyncio.create_task(tab.start(120, 40))
        await asyncio.sleep(0)  # one step: the process is spawned, start() waits for its pipes
        assert tab.proc is None and not starting.done()
        await tab.hang_up()
        await starting
        assert tab.proc is not None
        code = tab.proc.returncode  # None: the hang-up returned with the dashboard still running
        if code is None:  # ended here, inside the loop that owns its pipes
            os.killpg(tab.proc.pid, signal.SIGKILL)
            await tab.proc.wait()
            await asyncio.gather(*tab._tasks)
        return tab, code

    try:
        tab, code = asyncio.run(hang_up_mid_start())
        assert code is not None, "the hang-up returned before the dashboard ended"
        assert code in (129, -signal.SIGHUP), (code, bytes(tab.stderr)[-2000:])
        assert _ours(tmp_path) == []
        assert list((tmp_path / "tmp").glob("symmtui-demo-*")) == []
    finally:
        _kill_all(tmp_path)


def test_a_killed_dashboard_takes_its_demo_server_with_it(tmp_path: Path) -> None:
    """serve SIGKILLs the group of a dashboard that did not quit in time; the demo server is in a session of its
    own (as a launched server is): it outlived the dashboard for good. It now ends when its launcher ends."""
    async def kill_once_the_server_runs() -> int:
        tab = Tab(DEMO, _env(tmp_path), _nothing_to_page, _nothing_to_page, _no_close)
        await tab.start(120, 40)
        assert tab.proc is not None
        status = None
        deadline = asyncio.get_running_loop().time() + 60
        while status is None:  # the demo server's own status file: it runs
            status = next((tmp_path / "tmp").glob("symmtui-demo-*/server-status.json"), None)
            assert tab.proc.returncode is None and asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        pid = 0
        while not pid:  # written atomically; read until it names the server
            with contextlib.suppress(OSError, ValueError):
                pid = int(json.loads(status.read_text(encoding="utf-8")).get("pid", 0))
            await asyncio.sleep(0.01)
        os.killpg(tab.proc.pid, signal.SIGKILL)
        await tab.proc.wait()
        await asyncio.gather(*tab._tasks)
        return pid

    try:
        server = psutil.Process(asyncio.run(kill_once_the_server_runs()))
        try:
            server.wait(timeout=10)
        except psutil.TimeoutExpired:
            pytest.fail(f"the demo server (pid {server.pid}) outlived its SIGKILLed dashboard")
        assert _ours(tmp_path) == []
    finally:
        _kill_all(tmp_path)


def test_catches_reads_the_signal_mask() -> None:
    assert catches(os.getpid(), signal.SIGINT)  # Python's KeyboardInterrupt handler
    assert not catches(os.getpid(), signal.SIGHUP)
    assert not catches(2**22 + 1, signal.SIGHUP)  # no such process


def test_page_messages_other_than_the_pages_are_ignored() -> None:
    assert parse_message('["stdin", "q"]') == ("stdin", "q")
    assert parse_message('["resize", {"width": 80, "height": 24}]') == ("resize", (80, 24))
    for junk in ("", "not json", "[", "{}", "[]", "[1]", '["stdin"]', '["stdin", 1]', '["resize", {"width": 1e9}]',
                 '["resize", {"width": true, "height": 2}]', '["resize", {"width": 0, "height": 2}]',
                 '["evil", {}]', '["ping", {}]', "\x00", "[" * 100000):
        assert parse_message(junk) is None, junk
