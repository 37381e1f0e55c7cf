"""The UI keeps moving while NVML takes seconds on a call or the health endpoint hangs."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.gpu_panel import GpuPanel, GpuTable
from symmtui.ui.widgets.log_view import LogLines, LogView
from tests.ui.kit import READY_LOG, answer, demo_session, settle, text, wait_for, watched


async def test_slow_nvml_call_does_not_freeze_the_ui() -> None:
    """An NVML call that blocks (2 s in the issue; here until the test opens its gate): keys still work."""
    module = load_standin("rtx-pro-6000-x8-pcie")
    host = standin_host(module)
    gate = threading.Event()  # the slow call returns when this is set (30 s at most)
    entered = threading.Event()
    session = watched(nvml=Nvml(module), sample_gpus=True, sample_interval=0.05)
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.query_one(GpuPanel).query_one(GpuTable).snapshot is not None,
                           "a first GPU sample on screen")
            host.slow("nvmlDeviceGetUtilizationRates", 30.0, gate=gate, entered=entered)
            await wait_for(pilot, entered.is_set, "the sampler to enter the slow call")
            panel = app.query_one(GpuPanel)
            await wait_for(pilot, lambda: "NVML slow: waiting" in str(panel.border_subtitle or ""),
                           "the Board to name the slow call")
            before = app.theme
            await pilot.press("t")
            await settle(pilot)
            # the key took effect while the NVML call is still blocked (the gate is closed)
            assert app.theme != before, f"theme still {before}; focused={app.focused!r} screen={app.screen!r}"
            assert "NVML slow: waiting" in str(panel.border_subtitle), "the slow call ended before the key"
            gate.set()
            host.heal()
    finally:
        gate.set()
        session.close()


@pytest.fixture
def hanging_server() -> Iterator[tuple[str, threading.Event, Callable[[], None]]]:
    """A real HTTP endpoint on 127.0.0.1 that accepts, reads the request, and never answers (until the test
    calls the third item: then it closes the connections it holds, so the probe ends before its timeout)."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    got_request = threading.Event()
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)
            conn.settimeout(5)
            try:
                if conn.recv(4096):
                    got_request.set()
            except OSError:
                pass

    def hang_up() -> None:
        stop.set()
        for conn in list(held):
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/health", got_request, hang_up
    finally:
        stop.set()
        srv.close()
        thread.join(5)
        for conn in held:
            conn.close()


async def test_hanging_health_endpoint_does_not_freeze_the_ui(
    hanging_server: tuple[str, threading.Event, Callable[[], None]], tmp_path: Path
) -> None:
    url, got_request, hang_up = hanging_server
    log = tmp_path / "server.log"
    log.write_bytes(READY_LOG.read_bytes()[:2000])  # a log that is mid-start (no ready marker)
    session = watched(log, url=url, probe_timeout=5.0)
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, got_request.is_set, "the probe to send its request")
            log_view = app.query_one(LogView)
            await wait_for(pilot, lambda: log_view.line_count > 0, "the log lines")
            # the probe is now blocked on a server that never answers (its timeout is 5 s)
            following, errors_only = log_view.following, log_view.errors_only
            await pilot.press("f")
            await settle(pilot)
            assert log_view.following is not following, f"f did not toggle following (was {following})"
            await pilot.press("e")
            await settle(pilot)
            assert log_view.errors_only is not errors_only, f"e did not toggle errors-only (was {errors_only})"
            assert app.board is not None, "no verdict reached the UI"
            snap = app.board.snapshot
            assert snap.probe_ok is not True, f"a hanging endpoint was called healthy: {snap.probe_detail}"
    finally:
        hang_up()  # the probe's request ends now instead of at its 5 s timeout: closing waits for it
        session.close()


async def test_relaunch_blocked_by_a_stranger_on_the_port_is_explained() -> None:
    """A stranger holds the server port: the relaunch modal says who and what to do; nothing is signalled."""
    import os
    from urllib.parse import urlparse

    from symmtui.judge.readiness import State
    from symmtui.ui.screens.confirm import ConfirmScreen
    from symmtui.ui.screens.relaunch import RelaunchScreen

    session, demo = demo_session(40.0, port_timeout=0.5)
    port = urlparse(demo.profile.url).port
    stranger = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.board is not None and app.board.state is State.CRASHED,
                           "the first crash")
            stranger.bind(("127.0.0.1", port))
            stranger.listen(1)
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the relaunch question")
            await answer(pilot)
            # (the confirmation's callback starts the relaunch a moment after the key: wait for its screen)
            await wait_for(pilot, lambda: isinstance(app.screen, RelaunchScreen) and not app.relaunching,
                           "the relaunch attempt to end")
            # the readiness panel's wrapped "not launching: the port is" can show before the modal's text:
            # wait for the modal's explanation itself
            await wait_for(pilot, lambda: "not launching: the port is still held" in text(app)
                           and "symmtui stop --kill-pid" in text(app), "the relaunch's outcome in its modal")
            screen = text(app)
            assert f"pid {os.getpid()}" in screen  # names the holder
            await pilot.press("escape")
            assert not isinstance(app.screen, RelaunchScreen)
            await pilot.press("t")  # the app is still alive and answering
    finally:
        stranger.close()
        session.close()


async def test_nvml_init_failure_is_explained_in_the_panels() -> None:
    """No driver: the GPU panel and the topology say why, the rest of the dashboard works."""
    from symmtui.gpu.standin.errors import NVML_ERROR_DRIVER_NOT_LOADED

    module = load_standin("rtx-pro-6000-x8-pcie")
    standin_host(module).fail_init(NVML_ERROR_DRIVER_NOT_LOADED)
    session = watched(nvml=Nvml(module), sample_gpus=True, sample_interval=0.1)
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: "GPUs: " in text(app) and "topology: " in text(app), "both panels")
            screen = text(app)
            assert "Driver Not Loaded" in screen or "driver" in screen.lower()
            await pilot.press("t")
            assert app.theme != "symmtui-dark"
    finally:
        session.close()


# Patterns that backtrack for ever in Python's re on the lines below (constructed hostile input: a run of one
# letter a trailing `$` or `!` can never accept); the dashboard's filters compile them with RE2 instead.
NASTY_FILTERS = (r"(a+){10}$", r"(?:\w+){8}$", r"(.*)(.*)(.*)(.*)(.*)(.*)$x", r"(a|aa)*$", r"(\w|\w)*$")


def _wide_log(tmp_path: Path) -> Path:
    """A start line, 300 lines of 4,000 letters that a trailing `$` or `!` never lets a nasty filter accept, a tail."""
    log = tmp_path / "server.log"
    log.write_text("[2026-01-01 00:00:00] server starting\n" + "".join(f"{'a' * 4000}!\n" for _ in range(300))
                   + "aaaa tail\n")
    return log


@pytest.mark.parametrize("attempt", range(6))
async def test_lines_wider_than_the_pane_leave_the_last_line_above_the_scrollbar(tmp_path: Path, attempt: int) -> None:
    """A log of lines wider than the pane: the horizontal scrollbar comes once they are laid out, the pane is a row
    shorter, and following, its last line sat under the scrollbar (scrolled one row short: seen in CI, and about
    one start in twelve here; the attempts make a return of it likely to show)."""
    session = watched(_wide_log(tmp_path))
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.query_one(LogView)
            await wait_for(pilot, lambda: view.line_count == 302 and view.settled, "the log indexed")
            await settle(pilot)
            lines = view.query_one(LogLines)
            assert lines.show_horizontal_scrollbar and lines.scroll_y == lines.max_scroll_y
            assert "aaaa tail" in text(app)
    finally:
        session.close()


async def test_a_nasty_filter_typed_with_i_leaves_the_dashboard_responsive(tmp_path: Path) -> None:
    """i, a pattern that froze the screen (and `q`) for good under Python's re, Enter: the filter is applied,
    and the next key acts: q quits the dashboard."""
    session = watched(_wide_log(tmp_path))
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.query_one(LogView)
            await wait_for(pilot, lambda: "aaaa tail" in text(app), "the log's last line")
            for pattern in NASTY_FILTERS:
                await pilot.press("i", *pattern, "enter")
                await wait_for(pilot, lambda: not view.filtering, f"the filter {pattern!r} applied")
                assert f"in /{pattern}/" in app.query_one("LogStatus").render().plain
                await pilot.press("X")  # clear it: the next one filters the whole log again
                await wait_for(pilot, lambda: not view.filtering, "the filters cleared")
            await pilot.press("i", *NASTY_FILTERS[0], "enter")
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, "q to quit the dashboard")
    finally:
        session.close()
