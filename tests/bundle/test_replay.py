"""The demo's bundle: recorded for real (the crash story, headless), reported, replayed in the dashboard."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.build import demo_spec, open_demo
from symmtui.bundle.format import SUFFIX, read_bundle
from symmtui.bundle.replay import READ_ONLY, Recording, ReplaySession, states_in
from symmtui.bundle.report import markdown
from symmtui.judge.readiness import State
from symmtui.session.intents import ApplyPatch, CheckPatch, Launch
from symmtui.session.mailbox import Mailbox
from symmtui.session.messages import EngineBatch, SessionMessage, VerdictReached
from symmtui.ui.replay import ReplayApp
from symmtui.ui.widgets.gpu_panel import GpuTable
from tests.ui.kit import text, toasts, wait_for

pytestmark = pytest.mark.xdist_group("bundle-replay")  # one worker records the demo once for the module


def _verdict(box: Mailbox, state: State, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        box.wait(0.5)
        if any(isinstance(m, VerdictReached) and m.snapshot.state is state for m in box.take()):
            return
    raise AssertionError(f"no {state} verdict within {timeout} s")


@pytest.fixture(scope="module")
def demo_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The crash story, driven headless: KeyError: 12, the patch, the relaunch, READY; recorded as the demo does.
    In XDG dirs of its own: a module's fixture runs before each test's (tests/conftest.py), and this one's demo
    reserved its default bundle in the real ~/.local/state (an empty file left there by every run)."""
    root = tmp_path_factory.mktemp("demo")
    dest = root / f"demo-crash{SUFFIX}"
    with pytest.MonkeyPatch.context() as mp:
        for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            mp.setenv(var, str(root / var.lower()))
        spec, demo = demo_spec(160.0)
        assert spec.record is not None
        session = open_demo(replace(spec, record=replace(spec.record, dest=dest)), demo)
        try:
            box = session.attach(lambda: None)
            _verdict(box, State.CRASHED)
            session.ask(ApplyPatch(session.ask(CheckPatch())))
            session.ask(Launch())
            _verdict(box, State.READY)
        finally:
            session.close()  # writes the bundle a last time, then the demo removes its temp dir
    return dest


def test_the_demo_bundle_holds_the_crash_then_ready_and_reports_both(demo_bundle: Path) -> None:
    bundle = read_bundle(demo_bundle)
    assert bundle.data["final"] is True
    assert [v["state"] for v in bundle.verdicts] == ["crashed", "ready"]
    states = [(g, s) for _t, g, s in states_in(Recording(bundle))]
    crash = states.index(next(x for x in states if x[1] is State.CRASHED))
    ready = states.index(next(x for x in states if x[1] is State.READY))
    assert crash < ready and states[crash][0] != states[ready][0]  # two launches, in that order
    assert bundle.data["gpu"]["rounds"] and bundle.data["topology"] is not None
    env = bundle.environment
    assert env is not None and len(env.gpus) == 8 and env.capability == "12.0"
    md = markdown(bundle)
    assert md.startswith("## symmtui report: READY")
    assert "### Root cause (an earlier launch)" in md and "KeyError: 12" in md
    assert "- **Launch 1:** **CRASHED**" in md and "**READY**" in md.split("- **Launch 1:**")[1]


async def test_replay_of_the_demo_shows_the_crash_then_ready_and_seeks(demo_bundle: Path) -> None:
    recording = Recording(read_bundle(demo_bundle))
    crash_t = next(t for t, _g, s in states_in(recording) if s is State.CRASHED)
    session = ReplaySession(recording, speed=max(1.0, recording.duration / 1.5))
    app = ReplayApp(session, step=crash_t + 0.01)
    said = toasts(app)
    posted: list[State] = []  # every judgement the replay posted, in order (the mailbox may merge them)

    def hear(message: SessionMessage) -> None:
        if isinstance(message, EngineBatch) and (not posted or posted[-1] is not message.board.state):
            posted.append(message.board.state)

    session.observe(hear)

    def state() -> State | None:
        return app.board.state if app.board is not None else None

    try:
        async with app.run_test(size=(130, 40)) as pilot:
            # 1. played through: the first launch's crash, then the relaunch's READY, with the GPU panel
            await wait_for(pilot, lambda: session.ended.is_set() and state() is State.READY, "the replay to end READY")
            assert posted.index(State.CRASHED) < posted.index(State.READY), posted
            assert "READY" in text(app)
            table = app.query_one(GpuTable)
            await wait_for(pilot, lambda: table.snapshot is not None, "a recorded GPU round on the panel")
            # 2. seek: pause, back to the start, one step forward lands just past the crash
            await pilot.press("space")
            assert session.paused
            for _ in range(int(recording.duration / (crash_t + 0.01)) + 1):
                await pilot.press("left")
            await pilot.press("right")
            await wait_for(pilot, lambda: state() is State.CRASHED, "the seek back to the crash")
            await wait_for(pilot, lambda: "KeyError: 12" in text(app), "the crash in the log pane again")
            assert abs(session.position - (crash_t + 0.01)) < 1e-6
            # 3. resume: it plays on to READY; intents act on live servers only
            await pilot.press("space")
            await wait_for(pilot, lambda: state() is State.READY, "READY after resuming")
            await pilot.press("r")  # at READY p has nothing to fix; r is refused: a replay shows what was recorded
            await wait_for(pilot, lambda: READ_ONLY in said, "the read-only note")
    finally:
        session.close()
