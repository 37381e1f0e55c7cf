"""The demo's fix story in-process on a fast clock: DeepGEMM crash -> diagnosis -> profile env fix -> relaunch -> READY."""

from __future__ import annotations

import tomllib

import pytest
from textual.widgets import Static

from symmtui.bringup.scan import scan_file
from symmtui.judge.readiness import State
from symmtui.launch.profile import load_profile
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.relaunch import RelaunchScreen
from tests.ui.kit import answer, current_launch, demo_session, dialog_title, text, wait_for


def _state(app: SymmApp) -> State | None:
    return app.board.state if app.board is not None else None


@pytest.mark.timeout(180)
async def test_demo_fix_story_env_fix_in_profile_relaunch_ready() -> None:
    session, demo = demo_session(160.0, "fix")
    root = demo.root
    profile = demo.profile.path
    assert profile is not None and profile.parent == root  # the demo's profile, in its temp dir
    first = current_launch(demo)
    assert first is not None
    try:
        app = SymmApp(session)
        async with app.run_test(size=(120, 40)) as pilot:
            # 1. the first launch dies in DeepGEMM and the diagnosis names the catalogue entry's cause and action
            await wait_for(pilot, lambda: _state(app) is State.CRASHED, "the first launch to crash", timeout=60)
            await wait_for(pilot, lambda: "SGLANG_ENABLE_JIT_DEEPGEMM=0" in text(app), "the diagnosis")
            assert "KeyError: '120a'" in text(app)
            assert "DeepGEMM" in text(app)
            assert "SGLANG_ENABLE_JIT_DEEPGEMM" not in profile.read_text()
            # 2. p shows the profile change as a TOML diff; nothing written yet
            await pilot.press("p")
            await wait_for(pilot, lambda: dialog_title(app) == "Apply the fix to the profile?", "the fix modal")
            body = str(app.screen.query_one("#confirm-body", Static).render())
            assert '+[server.env]' in body and '+SGLANG_ENABLE_JIT_DEEPGEMM = "0"' in body
            assert "SGLANG_ENABLE_JIT_DEEPGEMM" not in profile.read_text()
            # 3. y writes it to the demo's profile and offers the relaunch; y relaunches with it
            await answer(pilot)
            await wait_for(pilot, lambda: dialog_title(app) == "Relaunch?", "the relaunch offer")
            written = tomllib.loads(profile.read_text())
            assert written["server"]["env"] == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
            assert load_profile(profile).env == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
            sup = session.head.supervisor
            assert sup is not None and sup.profile.env == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}  # the next launch's
            await answer(pilot)
            # the key is handled later than it is sent (a loaded box): wait for the new launch, then its end
            await wait_for(pilot, lambda: getattr(current_launch(demo), "launch_id", first.launch_id) != first.launch_id,
                           "the relaunch's new launch")
            await wait_for(pilot, lambda: not app.relaunching, "the relaunch")
            await wait_for(pilot, lambda: not isinstance(app.screen, RelaunchScreen), "the relaunch steps to close")
            second = current_launch(demo)
            assert second is not None and second.launch_id != first.launch_id
            # 4. the simulated server sees the variable in its environment and comes up
            assert b"SGLANG_ENABLE_JIT_DEEPGEMM=0" in _environ(second.pid), "the relaunch without the env var"
            await wait_for(pilot, lambda: _state(app) is State.READY, "READY", timeout=120)
            # the relaunch walked the whole bring-up: its log says so (the live verdict's phases may stop
            # short: a health check that answers before the follower has read the last phases is READY, and
            # readiness takes no phase after READY)
            walked = [span.name for span in scan_file(second.log_path).phases]
            assert "capturing CUDA graphs" in walked and "warm-up" in walked, walked
            await wait_for(pilot, lambda: "READY" in text(app), "READY on screen")
            await pilot.press("q")
    finally:
        session.close()
    assert not root.exists()


def _environ(pid: int) -> bytes:
    """The environment the process started with (Linux /proc); empty when it is gone already."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().replace(b"\0", b"\n")
    except OSError:
        return b""
