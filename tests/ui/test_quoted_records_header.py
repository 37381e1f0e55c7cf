"""The dashboard's header and diagnosis pane over a healthy log whose request lines quote other processes' records
and crash words (constructed hostile input, tests/core/engine_kit.QUOTING_REQUESTS): READY, nothing red."""

from __future__ import annotations

from pathlib import Path

from symmtui.core.readiness import State
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.header import StatusHeader
from tests.core.engine_kit import quoting_log
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
