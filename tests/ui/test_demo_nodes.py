"""`symmtui demo --nodes 2` in-process on a fast clock: node1's TP13 hangs in NCCL init, the aggregate is
STALLED naming node1 (its log and stacks shown), r relaunches both nodes, READY; GPU rows grouped by node."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.judge import board as boards
from symmtui.judge.board import NodeInput
from symmtui.judge.readiness import State
from symmtui.judge.verdict import NodeView
from symmtui.session.messages import VerdictReached
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.widgets.diagnosis import DiagnosisView
from symmtui.ui.widgets.gauge import ReadinessGauge
from symmtui.ui.widgets.gpu_panel import GpuTable
from symmtui.ui.widgets.header import StatusHeader
from symmtui.ui.widgets.stacks import StacksView
from tests.handclock import LeapClock
from tests.ui.kit import FIXTURES, answer, dashboard, demo_session, heartbeats, send_keys, text, wait_for


def _aggregate(app: SymmApp) -> State | None:
    return app.board.state if app.board is not None else None


@pytest.mark.timeout(120)
async def test_demo_nodes_hang_on_node1_stalled_then_relaunch_ready() -> None:
    clock = LeapClock()
    session, demo = demo_session(40.0, nodes=2, tp=4, clock=clock)  # TP4: two ranks a node, TP3 (node1's second) hangs
    try:
        app = SymmApp(session)
        async with app.run_test(size=(140, 48)) as pilot:
            # 1. the verdict: STALLED, naming node1 and the rank on it that never left NCCL init
            await wait_for(pilot, lambda: _aggregate(app) is State.STALLED and app.board is not None
                           and app.board.node == "node1", "STALLED naming node1", timeout=60)
            await wait_for(pilot, lambda: "node1 is behind" in text(app), "the aggregate's line on screen")
            await wait_for(pilot, lambda: "TP3 still init distributed" in text(app), "the rank behind on node1")
            # the pane moves to the node behind (once the aggregate's message is handled)
            await wait_for(pilot, lambda: app.shown == "node1" and "Log · node1" in text(app), "node1's pane")
            # the gauge's per-node phase lines (node1 may still read as starting when node0 went quiet first)
            await wait_for(pilot, lambda: re.search(r"[⏸▶] node1 +(stalled in )?init distributed", text(app))
                           is not None, "node1's line in the gauge")
            # node1's stacks (taken because the aggregate named it): TP3 inside NCCL communicator init
            stacks = app.query_one(StacksView)
            await wait_for(pilot, lambda: stacks.taken is not None and stacks.taken.report is not None,
                           "node1's stacks", timeout=30)
            await wait_for(pilot, lambda: "nccl_comm_init_rank" in text(app), "node1's stacks on screen")
            assert stacks.taken is not None and stacks.taken.node == "node1"
            assert "node1 on STALLED" in str(stacks.border_subtitle)
            # GPU rows of both nodes, read from their exporters, grouped under the node's name
            table = app.query_one(GpuTable)
            await wait_for(pilot, lambda: table.snapshot is not None and len(table.snapshot.infos) == 4,
                           "4 GPUs from two exporters")
            await wait_for(pilot, lambda: "── node0" in text(app) and "── node1" in text(app), "the node groups")
            # 2. r asks, y relaunches both nodes; the hang was once: READY
            await send_keys(pilot, "r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the relaunch question")
            # every node's launch is listed (read once the modal is drawn: it is pushed before it is laid out,
            # and a screen read in between is empty: the race that failed this test in loaded parallel runs)
            await wait_for(pilot, lambda: "node1:" in text(app), "the relaunch question drawn")
            await answer(pilot)
            await wait_for(pilot, lambda: not app.relaunching, "the relaunch")
            await wait_for(pilot, lambda: _aggregate(app) is State.READY, "READY", timeout=60)
            # the header, the banner and every node's line say READY alike, and the old dump is gone
            await wait_for(pilot, lambda: "✔ node0" in text(app) and "✔ node1" in text(app), "both nodes ready")
            assert app.query_one(StatusHeader).state is State.READY
            gauge = str(app.query_one("#gauge-nodes").render()) + str(app.query_one("#state-banner").render())
            assert "READY" in gauge and "stalled" not in gauge, gauge
            assert not app.query_one(StacksView).display and "nccl_comm_init_rank" not in text(app)
            clock.leap(3.0)  # past the nodes' 2 s stall: a node that went quiet once serving stays ready
            await heartbeats(pilot, clock)
            gauge = str(app.query_one(ReadinessGauge).query_one("#gauge-nodes").render())
            assert app.query_one(StatusHeader).state is State.READY and "stalled" not in gauge, gauge
    finally:
        session.close()
    assert not demo.root.exists()


async def test_dashboard_of_a_nodes_profile_shows_the_aggregate_and_each_node(tmp_path: Path) -> None:
    # copies: the dashboard records each node's bundle next to its log, which must not land in tests/fixtures
    logs = {name: shutil.copy(FIXTURES / name, tmp_path) for name in ("sglang-tp8-ready.log",
                                                                     "sglang-tp8-symm-mem-keyerror.log")}
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text(f'[server]\n[[nodes]]\nname = "gpu-a"\nlog = "{logs["sglang-tp8-ready.log"]}"\n'
                   f'[[nodes]]\nname = "gpu-b"\nlog = "{logs["sglang-tp8-symm-mem-keyerror.log"]}"\n')
    session = dashboard(str(cfg), None, None)
    try:
        app = SymmApp(session)
        async with app.run_test(size=(140, 48)) as pilot:
            await wait_for(pilot, lambda: "CRASHED on gpu-b: KeyError: 12" in text(app), "the aggregate's verdict")
            await wait_for(pilot, lambda: "✔ gpu-a" in text(app), "gpu-a READY in the gauge")  # each node's state
            # the pane moved once to the node the aggregate names: gpu-b's log, its diagnosis
            await wait_for(pilot, lambda: app.shown == "gpu-b" and "Log · gpu-b" in text(app), "gpu-b's pane")
            await wait_for(pilot, lambda: "KeyError: 12" in "\n".join(app.log_view.visible_lines()), "gpu-b's log")
            diagnosis = app.query_one(DiagnosisView)
            assert "KeyError: 12" in str(diagnosis.render())
            await wait_for(pilot, lambda: " o Node " in text(app), "the o key in the footer")
            # o: the head's log and its (empty) diagnosis; the aggregate stays CRASHED on gpu-b
            await pilot.press("o")
            await wait_for(pilot, lambda: "fired up and ready to roll" in text(app), "the head's log in the pane")
            assert app.shown == "gpu-a" and "Log · gpu-a" in text(app) and "No crashes or warnings." in text(app)
            screen = text(app)
            assert "✖ gpu-b" in screen and "CRASHED on gpu-b" in screen
            # the user chose: a later verdict naming gpu-b no longer moves the pane
            assert app.board is not None
            views = [NodeInput(NodeView(v.name, replace(v.snapshot, state=State.STALLED), v.ranks))
                     for v in app.board.nodes]
            stalled = VerdictReached(boards.build(app.board.seq + 1, views, 0.0), 0, None, None)
            assert stalled.board.node == "gpu-b" and "STALLED: gpu-b is behind" in stalled.board.headline
            session.send(stalled)  # as the Session posts it: the pane would move for it, had the user not chosen
            app.show_board(stalled.board)
            await wait_for(pilot, lambda: "STALLED: gpu-b is behind" in text(app), "the later verdict")
            assert app.shown == "gpu-a"
            await pilot.press("o")  # and o comes back round to gpu-b
            await wait_for(pilot, lambda: "Log · gpu-b" in text(app), "gpu-b's pane again")
            assert "KeyError: 12" in "\n".join(app.log_view.visible_lines())
    finally:
        session.close()
