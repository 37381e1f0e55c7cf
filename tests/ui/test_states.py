"""States and details the gauge must make unmistakable; buttons; ETA from history; bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.cli import main
from symmtui.gpu.facts import PatchFacts
from symmtui.judge.readiness import State
from symmtui.launch.history import Estimate
from symmtui.session.patching import Patcher
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.screens.patch import PatchScreen
from symmtui.ui.widgets.header import StatusHeader
from tests.ui.kit import answer, crashed_session, settle, starting_session, text, wait_for

STATES = [(State.STALLED, "STALLED"), (State.TIMED_OUT, "TIMED OUT"), (State.STOPPED, "STOPPED"),
          (State.WAITING, "WAITING")]


async def test_eta_from_launch_history_then_every_state_named_in_header_and_gauge() -> None:
    """One app start: the ETA of a loading launch, then the session's batches move it through each state
    (as a live session's do) and the header, the gauge's banner and its class name each one."""
    session = starting_session()
    session.estimate = Estimate(samples=3, total=480.0,
                               phases={"init distributed": 20.0, "loading weights": 420.0, "warm-up": 40.0})
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = text(app)
        assert "from 3 earlier launches" in screen
        assert "timeout in 14:29" in screen
        eta = session.board().about.eta
        assert eta.runs == 3 and eta.seconds is not None and 0 < eta.seconds < 480

        for state, words in STATES:
            session.post(replace(session.fixed_snapshot, state=state))
            await settle(pilot)
            header = app.query_one(StatusHeader)
            assert header.state is state
            lines = text(app).splitlines()
            assert words in lines[0], words  # the header
            assert any(words in line for line in lines[1:8]), words  # the gauge's banner
            banner = app.query_one("#state-banner")
            assert banner.has_class("-state-" + words.lower().replace(" ", "-"))


async def test_buttons_work_with_the_mouse(tmp_path: Path) -> None:
    from symmtui.demo.sandbox import write_sandbox

    sandbox = write_sandbox(tmp_path / "site")
    session = crashed_session(patcher=Patcher(site=sandbox.site, package="sglang", facts=lambda: PatchFacts.given((12, 0))))
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.click("#btn-patch")
        assert isinstance(app.screen, PatchScreen)
        await pilot.press("escape")
        await pilot.click("#btn-relaunch")  # no profile: explained, no modal
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)


async def test_patch_check_failure_is_shown_in_the_modal(tmp_path: Path) -> None:
    session = crashed_session(patcher=Patcher(site=tmp_path / "empty-site", package="sglang", facts=lambda: PatchFacts.given((12, 0))))
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        modal = app.screen
        assert isinstance(modal, PatchScreen)
        await wait_for(pilot, lambda: not modal.busy, "the check to fail")
        assert modal.view is None
        # the modal's text, its wrapped lines joined (the message's length depends on tmp_path's)
        def modal_text() -> str:
            return " ".join(part[1].strip() for line in text(app).splitlines() if len(part := line.split("█")) > 2)

        await wait_for(pilot, lambda: "is not a directory" in modal_text(), "the check's error in the modal")
        await pilot.press("y")  # nothing to confirm: the modal stays, nothing happens
        assert app.screen is modal
        await pilot.press("n")
        assert app.screen is not modal


async def test_patch_modal_on_a_pre_hopper_gpu_says_there_is_nothing_to_do(tmp_path: Path) -> None:
    from symmtui.demo.sandbox import write_sandbox

    sandbox = write_sandbox(tmp_path / "site")
    before = {p: p.read_bytes() for p in sandbox.site.rglob("*.py")}
    session = crashed_session(patcher=Patcher(site=sandbox.site, package="sglang", facts=lambda: PatchFacts.given((8, 9))))
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        modal = app.screen
        assert isinstance(modal, PatchScreen)
        await wait_for(pilot, lambda: not modal.busy, "the check")
        assert modal.view is not None and modal.view.report.state == "not-applicable"
        await wait_for(pilot, lambda: "does not use these tables" in text(app), "the not-applicable note")
        assert "cannot be patched" not in text(app)
        await answer(pilot)  # nothing to apply: closes, changes nothing
        await settle(pilot)
        assert app.screen is not modal
    assert {p: p.read_bytes() for p in sandbox.site.rglob("*.py")} == before


def test_demo_speed_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--speed", "0"]) == 2
    assert "argument --speed: must be a number between 0.01 and 1000" in capsys.readouterr().err


async def test_no_color_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = SymmApp(crashed_session())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.no_color
        # the verdict is in words, not only in colour
        await wait_for(pilot, lambda: "CRASHED" in text(app), "the verdict")
