"""The dashboard on the real hung tree: one automatic dump at STALLED, the panel names the odd rank, `s` dumps again."""

from __future__ import annotations

from pathlib import Path

from symmtui.build import Limits
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.stacks import StacksView
from tests.handclock import LeapClock
from tests.stacks.hang_kit import hung_server
from tests.stacks.test_stacks_real import needs_ptrace
from tests.ui.kit import heartbeats, text, wait_for, watched


@needs_ptrace
async def test_stalled_dumps_once_and_the_panel_names_the_odd_rank(tmp_path: Path) -> None:
    with hung_server(tmp_path, hang_rank=5) as (proc, log):
        clock = LeapClock()
        session = watched(log, pid=proc.pid, limits=Limits(timeout=None, stall=0.5), auto_stacks=True, clock=clock)
        app = SymmApp(session)
        try:
            async with app.run_test(size=(160, 50)) as pilot:
                view = app.query_one(StacksView)
                await wait_for(pilot, lambda: view.taken is not None, "the automatic dump at STALLED")
                first = view.taken
                assert first is not None and first.auto and first.report is not None
                await wait_for(pilot, lambda: "TP5 in" in text(app), "the panel drawn")
                screen = text(app)  # the panel is narrow: its lines wrap
                assert "7 processes (TP0-TP4, TP6, TP7) in stay ←" in screen
                assert "TP5 in stay ← nccl_comm_init_rank ←" in screen
                gauge = app.query_one("#gauge-ranks")
                assert gauge.display
                assert "7/8 ranks finished init distributed; TP5" in screen
                await heartbeats(pilot, clock, 3)  # still STALLED, 3 Boards on: no second automatic dump
                assert view.taken is first
                assert len(list(log.parent.glob("server.log.stacks-*.json"))) == 1
                await pilot.press("s")
                await wait_for(pilot, lambda: view.taken is not first, "the dump on the s key")
                assert view.taken is not None and not view.taken.auto
                assert view.border_subtitle.endswith("on s")
        finally:
            session.close()


@needs_ptrace
async def test_no_auto_stacks_waits_for_the_key(tmp_path: Path) -> None:
    with hung_server(tmp_path, hang_rank=2, tp=4) as (proc, log):
        clock = LeapClock()
        session = watched(log, pid=proc.pid, limits=Limits(timeout=None, stall=0.5), clock=clock)  # no auto_stacks
        app = SymmApp(session)
        try:
            async with app.run_test(size=(160, 50)) as pilot:
                await wait_for(pilot, lambda: "STALLED" in text(app), "STALLED")
                await heartbeats(pilot, clock)  # STALLED for two Boards more: no dump without the key
                view = app.query_one(StacksView)
                assert view.taken is None and not view.display
                await pilot.press("s")
                await wait_for(pilot, lambda: view.taken is not None, "the dump on the s key")
                assert view.taken is not None and not view.taken.auto  # the key's, not one the STALLED started
                assert len(list(log.parent.glob("server.log.stacks-*.json"))) == 1
                await wait_for(pilot, lambda: "TP2 in stay ← nccl_comm_init_rank" in text(app), "the panel drawn")
        finally:
            session.close()
