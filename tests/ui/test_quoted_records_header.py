"""The dashboard's header and diagnosis pane over a healthy log whose request lines quote other processes' records
and crash words (constructed hostile input, tests/core/engine_kit.QUOTING_REQUESTS): READY, nothing red."""

from __future__ import annotations

from pathlib import Path

from symmtui.judge.readiness import State
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.header import StatusHeader
from tests.core.engine_kit import FIXTURES, quoting_log
from tests.ui.kit import dashboard, settle, text, wait_for


async def test_the_header_stays_ready_over_quoting_requests(tmp_path: Path) -> None:
    log = quoting_log(tmp_path / "server.log")
    session = dashboard(None, str(log))
    try:
        app = SymmApp(session)
        async with app.run_test(size=(140, 44)) as pilot:
            await wait_for(pilot, lambda: app.query_one(StatusHeader).state is State.READY, "READY in the header")
            await settle(pilot)
            screen = text(app)
            assert "READY" in screen.splitlines()[0] and "CRASHED" not in screen
            assert "✖" not in screen  # no red mark anywhere: no error was made of a request's content
    finally:
        session.close()


async def test_a_warning_only_log_shows_no_red_mark(tmp_path: Path) -> None:
    """sgl-project/sglang#2746 (tests/fixtures): decode lines and SGLang's retraction warnings: READY, a ▲ only."""
    log = tmp_path / "server.log"
    log.write_text((FIXTURES / "sglang-2746-decode-retraction.log").read_text())
    session = dashboard(None, str(log))
    try:
        app = SymmApp(session)
        async with app.run_test(size=(140, 44)) as pilot:
            await wait_for(pilot, lambda: "▲" in text(app), "the retraction warning in the diagnosis pane")
            assert app.query_one(StatusHeader).state is State.READY
            assert "✖" not in text(app) and "CRASHED" not in text(app)
    finally:
        session.close()
