"""One history writer: a launch from the CLI and one from the dashboard record the same fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static

from symmtui.build import dashboard_spec
from symmtui.judge.readiness import READY_WAITING_HEALTH, State
from symmtui.launch.history import History
from symmtui.launch.notifyconf import NotifyConfig
from symmtui.notify.notifier import Notifier
from symmtui.session.core import Session
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from tests.launch.helpers import demo_config, run_cli, stop_at_end
from tests.ui.kit import answer, wait_for

__all__ = ["stop_at_end"]


@pytest.mark.timeout(120)
async def test_cli_and_dashboard_launches_record_the_same_fields(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "rtx-pro-6000-x8-pcie")  # capability 12: the preflight runs
    delays = tmp_path / "delays.json"  # the stand-in's log clock jumps after the weights (nothing waits)
    delays.write_text(json.dumps({"weights": 2}))
    cfg = demo_config(tmp_path, "--delays", str(delays))
    cli = run_cli("launch", "--config", str(cfg))
    assert cli.returncode == 0, cli.stdout + cli.stderr

    delays.write_text(json.dumps({"weights": 6}))  # the dashboard's relaunch is slower in one phase
    session = Session(dashboard_spec(str(cfg), None, None, record_bundle=False))
    told: list[str] = []
    notifier = Notifier(NotifyConfig(bell=False, desktop=False), name=session.name, host=session.host,
                        warn=told.append)
    session.observe(notifier.observe)
    session.start()
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.board is not None, "a first verdict")
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the relaunch question")  # a loaded box
            await answer(pilot)
            # the Session writes the history before it posts the READY batch: wait for both
            await wait_for(pilot, lambda: app.board is not None and app.board.state is State.READY
                           and len(History().entries()) == 2, "READY and the dashboard launch in the history",
                           timeout=90)
            # once READY, the gauge compares the relaunch with the launch before it, and so does the notification
            await wait_for(pilot, lambda: "loading weights 6 s (usual 2 s, 3.0x slower)" in str(
                app.query_one("#gauge-timings", Static).render()), "the gauge's timings line", timeout=10)
    finally:
        session.close()
    notifier.finish()
    ready = [n for n in notifier.sent if n.state == "READY"]
    assert ready and ready[-1].lines == ("timings: loading weights 6 s (usual 2 s, 3.0x slower)",), notifier.sent
    assert told == []

    from_cli, from_dashboard = History().entries()
    assert from_cli.launch_id != from_dashboard.launch_id
    for entry in (from_cli, from_dashboard):
        assert entry.verdict == "ready" and entry.cause is None and entry.end is not None
        assert entry.log_path.startswith(str(tmp_path / "logs"))
    assert from_cli.profile_key == from_dashboard.profile_key != ""
    assert from_cli.command_hash == from_dashboard.command_hash
    assert from_cli.patch == from_dashboard.patch == "no crash predicted"
    # the same server phases, in the same order, each with a duration (the ETA reads them); whether the
    # log's ready marker came before /health answered ("ready marker seen, waiting for health") is timing
    cli_phases = [p for p in from_cli.phases if p != READY_WAITING_HEALTH]
    assert cli_phases == [p for p in from_dashboard.phases if p != READY_WAITING_HEALTH]
    assert "ready" not in from_cli.phases and len(cli_phases) >= 5
    assert all(isinstance(v, float) and v >= 0 for v in [*from_cli.phases.values(), *from_dashboard.phases.values()])
    # and the next launch's ETA counts both
    est = History().estimate(from_cli.command_hash)
    assert est is not None and est.samples == 2
