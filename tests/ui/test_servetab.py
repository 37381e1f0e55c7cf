"""`symmtui serve`'s Tab on a real demo dashboard process: a tab gone while the dashboard starts.

textual-serve's in-band "quit", sent behind a resize before the app is mounted, left the dashboard in
a redraw loop for good (75-99 % of a core, deaf to SIGTERM): the Tab hangs it up instead, once it
handles SIGHUP, and it stops its demo server and removes its temp dir by itself (exit 129, not killed).
"""

from __future__ import annotations

import asyncio
import os
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


def test_catches_reads_the_signal_mask() -> None:
    import signal

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
