"""`symmtui` with no verb: options, one-line errors, and the dashboard attached to a real log."""

from __future__ import annotations

from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.judge.readiness import State
from symmtui.session.intents import Stop
from symmtui.ui.app import SymmApp
from tests.ui.kit import CRASH_LOG, answer, dashboard, text, wait_for


def test_nothing_to_watch_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./symmtui.toml here, none in the isolated XDG config dir
    assert main([]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("symmtui: error: nothing to watch") and "--log" in err and "\n" not in err


def test_bad_config_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text("[server]\ncommand = [\n")
    assert main(["--config", str(bad)]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("symmtui: error: ") and str(bad) in err


def test_verb_options_do_not_clash_with_dashboard_options() -> None:
    from symmtui.cli import build_parser

    args = build_parser().parse_args(["--theme", "symmtui-light", "demo", "--speed", "3"])
    assert args.dash_theme == "symmtui-light" and args.speed == 3.0 and args.theme is None


async def test_dashboard_attaches_to_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "rtx-pro-6000-x8-pcie")
    log = tmp_path / "server.log"
    log.write_bytes(CRASH_LOG.read_bytes())
    session = dashboard(None, str(log), None)
    assert session.why_not("launch") is not None and session.name == "attach server.log"
    assert session.why_not("relaunch") == session.why_not("launch")  # the help screen's note on r
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.board is not None and app.board.state is State.CRASHED,
                           "the crash in the attached log")
            await wait_for(pilot, lambda: " 7 RTX PRO 60" in text(app), "the GPU rows from the stand-in")
            await wait_for(pilot, lambda: "PIX" in text(app), "the topology")
            await wait_for(pilot, lambda: "press p to apply the SM120 patch" in text(app), "the diagnosis")
    finally:
        session.close()


async def test_dashboard_with_a_profile_finds_its_running_launch(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile with a command: the dashboard follows latest.log and offers relaunch."""
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "rtx-pro-6000-x8-pcie")
    profile = tmp_path / "symmtui.toml"
    profile.write_text(f'[server]\ncommand = ["/bin/sleep", "30"]\nlog_dir = "{tmp_path / "logs"}"\n')
    session = dashboard(str(profile), None, None)
    try:
        assert session.why_not("launch") is None
        assert session.head.source_text == str(tmp_path / "logs" / "latest.log")
    finally:
        session.close()


@pytest.mark.timeout(120)
async def test_dashboard_r_launches_a_profile_and_follows_it_to_ready(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing running yet: r, y launches the profile's server (the simulated one), the gauge reaches READY."""
    import json
    import sys

    from symmtui.demo.story import free_port
    from symmtui.launch import state
    from symmtui.launch.profile import load_profile
    from symmtui.ui.screens.confirm import ConfirmScreen

    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "rtx-pro-6000-x8-pcie")
    port = free_port()
    command = [sys.executable, "-m", "symmtui.demo.server", "--speed", "400", "--shards", "5", "--port", str(port),
               "--tp", "2"]
    profile = tmp_path / "symmtui.toml"
    profile.write_text(
        f"[server]\ncommand = {json.dumps(command)}\nlog_dir = {json.dumps(str(tmp_path / 'logs'))}\n"
        f'url = "http://127.0.0.1:{port}/health"\ngrace = 2\n'
    )
    session = dashboard(str(profile), None, None)
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.board is not None, "a first verdict")
            assert app.board is not None and app.board.state is State.WAITING
            await pilot.press("r")
            assert isinstance(app.screen, ConfirmScreen)
            await answer(pilot)
            await wait_for(pilot, lambda: app.board is not None and app.board.state is State.READY,
                           "READY", timeout=90)
            record = state.load(load_profile(profile).key)
            assert record is not None and record.log_path.startswith(str(tmp_path / "logs"))
    finally:
        session.ask(Stop(grace=2.0))
        session.close()
