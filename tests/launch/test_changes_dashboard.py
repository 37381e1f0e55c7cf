"""What changed since it last worked, in the dashboard (the diagnosis panel, `p`: back to what worked), the
crash notification and the replay of the bundle (which shows what was recorded, never compares again):
real `symmtui launch` child processes make the history, a real Session follows the crashed log."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from symmtui.build import dashboard_spec
from symmtui.bundle.format import read_bundle
from symmtui.bundle.replay import Recording, ReplaySession
from symmtui.judge.readiness import State
from symmtui.launch.history import History
from symmtui.launch.notifyconf import NotifyConfig
from symmtui.launch.profile import load_profile
from symmtui.notify.notifier import Notifier
from symmtui.session.core import Session
from symmtui.session.messages import EngineBatch
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.widgets.diagnosis import DiagnosisView
from tests.launch.helpers import demo_config, free_port, run_cli, stop_at_end, wait_until
from tests.ui.kit import answer, dialog_title, text, wait_for

__all__ = ["stop_at_end"]

FLAG = "--enable-torch-symm-mem"


@pytest.mark.timeout(120)
async def test_the_dashboard_shows_what_changed_and_p_goes_back_to_what_worked(tmp_path: Path) -> None:
    port = free_port()
    cfg = demo_config(tmp_path, port=port, speed=800.0, shards=3, env={"NCCL_P2P_LEVEL": "NVL"})
    assert run_cli("launch", "--config", str(cfg), "--no-record").returncode == 0
    demo_config(tmp_path, FLAG, port=port, speed=800.0, shards=3, env={"NCCL_P2P_LEVEL": "SYS"})
    bundle = tmp_path / "crash.symmtui-bundle.json.gz"
    crash = run_cli("launch", "--config", str(cfg), "--bundle", str(bundle))
    assert crash.returncode == 1, crash.stdout + crash.stderr
    said = [ln.strip() for ln in crash.stdout.splitlines() if ln.startswith("    ")]
    assert said[:1] == [f"{FLAG} added"] and "NCCL_P2P_LEVEL NVL -> SYS" in said

    # nothing runs: the dashboard follows the profile's latest (crashed) log
    session = Session(dashboard_spec(str(cfg), None, None, record_bundle=False))
    notifier = Notifier(NotifyConfig(bell=False, desktop=False), name=session.name, host=session.host,
                        warn=lambda _t: None)
    session.observe(notifier.observe)
    session.start()
    app = SymmApp(session)
    try:
        async with app.run_test(size=(140, 45)) as pilot:
            await wait_for(pilot, lambda: app.board is not None and app.board.state is State.CRASHED
                           and app.board.changes is not None, "the crash, compared")
            panel = str(app.query_one(DiagnosisView).render())
            assert "changed since the last READY launch, " in panel and f"· {FLAG} added" in panel
            assert panel.index(f"{FLAG} added") < panel.index("NCCL_P2P_LEVEL NVL -> SYS")
            await pilot.press("p")  # the diagnosis's fix is the patch; the flag it names was added since READY
            await wait_for(pilot, lambda: dialog_title(app) is not None, "back to what worked")
            body = str(app.screen.query_one("#confirm-body", Static).render())
            assert "Back to what worked: the last READY launch, " in body
            assert f"remove {FLAG} (the READY launch ran without it)" in body
            changed = [ln for ln in body.splitlines() if ln.startswith(("+", "-")) and ln[:3] not in ("+++", "---")]
            assert len(changed) == 2 and FLAG in changed[0] and FLAG not in changed[1]  # the command, less the flag
            assert not any("NCCL" in ln for ln in changed)  # the culprit only
            await answer(pilot)
            await wait_for(pilot, lambda: FLAG not in (load_profile(cfg).argv or ()), "the profile without the flag")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and "elaunch" in text(app),
                           "the relaunch question")
            await answer(pilot, "n")
    finally:
        session.close()
    notifier.finish()
    crashed = [n for n in notifier.sent if n.state == "CRASHED"]
    assert crashed and any(line.startswith("changed since the last READY launch, ") and f"{FLAG} added; " in line
                           for line in crashed[-1].lines), crashed
    assert load_profile(cfg).env["NCCL_P2P_LEVEL"] == "SYS"  # not named by the diagnosis: left as it is

    # the replay shows what the bundle recorded, with no history to compare with any more
    recorded = read_bundle(bundle).final
    assert recorded is not None and recorded["changes"]["lines"][0] == f"{FLAG} added"
    History().path.unlink()
    replay = ReplaySession(Recording(read_bundle(bundle)), speed=1000.0, sample_gpus=False)
    box = replay.attach(lambda: None)
    shown: list[EngineBatch] = []

    def crashed_batch() -> bool:
        shown.extend(m for m in box.take() if isinstance(m, EngineBatch))
        return any(b.board.state is State.CRASHED for b in shown)

    try:
        wait_until(crashed_batch, what="the replayed crash")
    finally:
        replay.close()
    verdict = next(b.board for b in shown if b.board.state is State.CRASHED)
    assert verdict.changes is not None
    assert list(verdict.changes.lines) == recorded["changes"]["lines"] and verdict.changes.since == recorded["changes"]["since"]
