"""Pilot test: p on a diagnosis whose fix is a launch flag shows the profile's TOML diff, applies it, offers the relaunch."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from symmtui.build import dashboard_spec, open_session
from symmtui.launch.profile import load_profile
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from tests.ui.kit import answer, dialog_title, settle, text, wait_for

# vllm-project/vllm#2418 (the error line as the issue quotes it), after vLLM's start-up lines
LOG = (
    "INFO 10-29 06:48:05 [api_server.py:1024] vLLM API server version 0.11.0\n"
    "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in "
    "KV cache (3664). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
)


async def test_p_applies_the_flag_to_the_profile_and_offers_the_relaunch(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(LOG)
    prof = tmp_path / "symmtui.toml"
    prof.write_text('[server]\ncommand = ["python", "-m", "vllm.entrypoints.openai.api_server", "--max-model-len", '
                    f'"4096"]\nlog_dir = "{tmp_path / "logs"}"\n')
    session = open_session(dashboard_spec(str(prof), str(log), None, record_bundle=False))
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "KV cache holds 3664 tokens" in text(app), "the diagnosis")
        await pilot.press("p")
        await wait_for(pilot, lambda: dialog_title(app) is not None, "the fix modal")
        body = str(app.screen.query_one("#confirm-body", Static).render())
        assert "KV cache holds 3664 tokens" in body
        assert '-command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--max-model-len", "4096"]' in body
        assert '+command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--max-model-len", "3664"]' in body
        assert "3664" not in prof.read_text()  # nothing written yet
        await answer(pilot)
        await wait_for(pilot, lambda: "3664" in prof.read_text(), "the profile written")
        argv = load_profile(prof).argv
        assert argv is not None and argv[-2:] == ("--max-model-len", "3664")
        await wait_for(pilot, lambda: app.board is not None and app.board.relaunch is not None
                       and "--max-model-len 3664" in app.board.relaunch.commands[0][1],
                       "the next launch's command on the Board")  # the next launch uses it
        await wait_for(pilot, lambda: dialog_title(app) == "Relaunch?", "the relaunch offer")
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    session.close()
