"""The whole demo story in-process on a fast clock: crash -> diagnosis -> patch -> relaunch -> READY."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from symmtui.judge.readiness import State
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.screens.patch import PatchScreen
from symmtui.ui.screens.relaunch import RelaunchScreen
from symmtui.ui.widgets.gpu_panel import GpuTable, ProcessList
from symmtui.ui.widgets.stacks import StacksView
from tests.ui.kit import answer, current_launch, demo_session, settle, text, wait_for


def _state(app: SymmApp) -> State | None:
    return app.board.state if app.board is not None else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.timeout(180)
async def test_demo_story_crash_patch_relaunch_ready() -> None:
    session, demo = demo_session(160.0)
    root = demo.root
    first = current_launch(demo)
    assert first is not None
    pids = [first.pid]
    try:
        app = SymmApp(session)
        async with app.run_test(size=(120, 40)) as pilot:
            # 1. the first launch dies with KeyError: 12 and the diagnosis says why
            await wait_for(pilot, lambda: _state(app) is State.CRASHED, "the first launch to crash")
            await wait_for(pilot, lambda: "press p to apply the SM120 patch" in text(app), "the diagnosis")
            assert "KeyError: 12 at torch_symm_mem.py:83" in text(app)
            # 2. p shows the check and the diff; y applies it to the sandbox
            await pilot.press("p")
            modal = app.screen
            assert isinstance(modal, PatchScreen)
            await wait_for(pilot, lambda: modal.view is not None, "the patch check")
            await wait_for(pilot, lambda: "12: {" in text(app), "the diff on screen")
            await answer(pilot)
            await wait_for(pilot, lambda: modal.result is not None, "the patch to apply")
            await wait_for(pilot, lambda: app.board is not None and app.board.patched, "the patch in the verdict")
            assert "r relaunches" in text(app)  # what the modal says next
            # 3. r (in the modal, as it says) asks, y relaunches: stop progress, then the new launch
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the relaunch question")
            await answer(pilot)
            await settle(pilot)
            await wait_for(pilot, lambda: not app.relaunching, "the relaunch")
            # the steps stay on screen a moment, then close
            await wait_for(pilot, lambda: "launched pid" in text(app), "the launch step")
            await wait_for(pilot, lambda: not isinstance(app.screen, RelaunchScreen), "the relaunch steps to close")
            second = current_launch(demo)
            assert second is not None and second.launch_id != first.launch_id
            pids.append(second.pid)
            # 4. the gauge walks through the phases to READY; GPU memory filled as weights loaded
            await wait_for(pilot, lambda: _state(app) is State.READY, "READY", timeout=120)
            assert app.board is not None
            walked = [span.name for span in app.board.snapshot.phases]
            for phase in ("init distributed", "loading weights", "capturing CUDA graphs", "warm-up"):
                assert phase in walked, walked
            await wait_for(pilot, lambda: "READY" in text(app), "READY on screen")
            table = app.query_one(GpuTable)

            def filled() -> bool:
                used = table.snapshot.samples[0].memory_used if table.snapshot is not None else 0
                return isinstance(used, int) and used > 60 * 1024**3

            await wait_for(pilot, filled, "GPU memory to show the loaded model")
            # the process holding GPU memory is the server we launched: listed as ours
            table.focus()
            procs = app.query_one(ProcessList)
            await wait_for(pilot, lambda: str(second.pid) in str(procs.render()), "the server in the process list")
            assert "ours" in str(procs.render()) and "stranger" not in str(procs.render())
            await pilot.press("q")
    finally:
        session.close()
    # on quit: the demo's servers are stopped and its temp dir removed
    assert not root.exists()
    assert not any(_alive(pid) for pid in pids)


@pytest.mark.timeout(180)
async def test_what_the_user_saves_in_the_demo_outlives_it(tmp_path: Path) -> None:
    """The demo's stack dump (taken at STALLED), a log export and its bundle go to the user's state dir, not
    into the demo's temp dir removed on quit; each demo run keeps a bundle of its own."""
    from msgspec.structs import replace

    from symmtui.build import demo_spec, open_demo
    from symmtui.bundle.wire import demo_bundle_path

    user_state = Path(os.environ["XDG_STATE_HOME"])  # this test's (conftest), the "user's" before the demo
    spec, demo = demo_spec(160.0, "hang", record_bundle=True)
    assert spec.record is not None and spec.record.dest is not None
    bundle = spec.record.dest
    assert bundle.is_relative_to(user_state) and bundle.name.startswith("demo-hang.")
    session = open_demo(replace(spec), demo)
    root = demo.root
    try:
        app = SymmApp(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: _state(app) is State.STALLED, "the hang story's stall", timeout=90)
            await wait_for(pilot, lambda: any((user_state / "symmtui" / "stacks").glob("*.stacks-*.json")),
                           "the automatic stacks dump, saved", timeout=90)
            stacks = app.query_one(StacksView)
            await wait_for(pilot, lambda: stacks.taken is not None, "the dump in the panel")
            first = stacks.taken
            said = str(stacks.render())
            assert "because the state became STALLED" in said and "saved: " in said, said
            assert "nccl_comm_init_rank" in said  # the frames of TP5's group, under its line
            await pilot.press("s")  # another dump on s: its own time and reason
            await wait_for(pilot, lambda: stacks.taken is not first, "a fresh dump on s", timeout=60)
            assert "on s (the server was STALLED)" in str(stacks.render())
            app.action_export()
            await wait_for(pilot, lambda: any((user_state / "symmtui" / "exports").glob("*.txt")), "the export")
            await pilot.press("q")
    finally:
        session.close()
    assert not root.exists()
    assert [p for p in (user_state / "symmtui" / "stacks").glob("*.json")]
    export = next((user_state / "symmtui" / "exports").glob("*.txt"))
    assert "Init torch distributed begin." in export.read_text()
    assert bundle.exists() and bundle.stat().st_size > 0
    again = demo_bundle_path("hang")  # the next run's: its own name
    assert again != bundle and again.parent == bundle.parent
