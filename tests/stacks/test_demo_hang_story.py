"""`symmtui demo --story hang` in-process: one rank stops in NCCL init, STALLED, the panel names it, relaunch recovers."""

from __future__ import annotations

import pytest

from symmtui.judge.readiness import State
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.widgets.stacks import StacksView
from tests.stacks.test_stacks_real import needs_ptrace
from tests.ui.kit import answer, current_launch, demo_session, send_keys, text, wait_for


def _state(app: SymmApp) -> State | None:
    return app.board.state if app.board is not None else None


@needs_ptrace
@pytest.mark.timeout(180)
async def test_hang_story_stalled_stacks_relaunch_ready() -> None:
    session, demo = demo_session(160.0, "hang")
    first = current_launch(demo)
    assert first is not None
    try:
        app = SymmApp(session)
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_for(pilot, lambda: _state(app) is State.STALLED, "STALLED", timeout=60)
            view = app.query_one(StacksView)
            await wait_for(pilot, lambda: view.taken is not None, "the automatic dump")
            assert view.taken is not None and view.taken.auto and view.taken.report is not None
            ranked = [g for g in view.taken.report.groups if any(p.rank for p in g.procs)]
            assert [g.labels for g in ranked] == ["TP0-TP4, TP6, TP7", "TP5"]
            assert ranked[1].phase == "NCCL init"
            await wait_for(pilot, lambda: "TP5 in stay ← nccl_comm_init_rank ←" in text(app), "the panel")
            assert "TP5 still init distributed" in text(app)  # the gauge
            await send_keys(pilot, "r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the relaunch question")
            await answer(pilot)
            await wait_for(pilot, lambda: (current_launch(demo) or first).launch_id != first.launch_id,
                           "the relaunch")
            await wait_for(pilot, lambda: _state(app) is State.READY, "READY after the relaunch", timeout=120)
    finally:
        session.close()
