"""The dashboard with `--log-cmd`: a real command's output in the log pane, judged; its exit shown; no orphan."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.judge.readiness import State
from symmtui.logs.logcmd import Backoff, CommandFollower, LogCommand
from symmtui.ui.app import SymmApp
from tests.ui.kit import CRASH_LOG, dashboard, text, toasts, wait_for

WRITER = Path(__file__).resolve().parents[1] / "fixtures" / "log_cmd_writer.py"


async def test_dashboard_follows_a_log_command_and_says_when_it_exits(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`symmtui --log-cmd ...`: the crash is judged from the command's output, the pane shows its lines, the
    command's exit is in the pane's title and a toast, and closing kills it."""
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "rtx-pro-6000-x8-pcie")
    import symmtui.logs.logcmd as logcmd

    monkeypatch.setattr(logcmd, "Backoff", lambda: Backoff(first=30.0, cap=30.0))  # one run: its exit stays shown
    pidfile = tmp_path / "pid"
    cmd = LogCommand.from_argv([sys.executable, str(WRITER), str(CRASH_LOG), "--pidfile", str(pidfile),
                                "--exit", "1"])
    session = dashboard(None, None, None, log_cmd=cmd)
    node = session.head
    assert session.name == f"attach `{cmd.text}`" and node.source == cmd and node.log_file is None
    engine = node.engine
    assert engine is not None and isinstance(engine._follower, CommandFollower)
    app = SymmApp(session)
    said = toasts(app)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.board is not None and app.board.state is State.CRASHED,
                           "the crash printed by the log command")
            await wait_for(pilot, lambda: "press p to apply the SM120 patch" in text(app), "the diagnosis")
            await wait_for(pilot, lambda: "log command exited (code 1)" in str(app.log_view.border_subtitle),
                           "the command's exit in the log pane's title")
            assert "restarting in 30 s" in str(app.log_view.border_subtitle)
            assert any("log command exited (code 1)" in t for t in said)
            assert "KeyError: 12" in text(app)
    finally:
        session.close()
    pid = int(pidfile.read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


async def test_a_log_command_that_cannot_start_is_shown_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dashboard keeps running: the reason is an error toast and the log pane's title (wait exits 2)."""
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "rtx-pro-6000-x8-pcie")
    session = dashboard(None, None, None, log_cmd=LogCommand.parse("no-such-log-program-xyz logs -f sglang"))
    app = SymmApp(session)
    said = toasts(app)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: "not found on PATH" in str(app.log_view.border_subtitle),
                           "the reason in the log pane's title")
            assert any("'no-such-log-program-xyz' not found on PATH" in t for t in said)
            assert app.board is not None and app.board.state is State.WAITING
    finally:
        session.close()


def test_dashboard_log_cmd_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--log-cmd", "kubectl logs -f 'pod/x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symmtui: error: cannot split the log command") and err.count("\n") == 1
    assert main(["--log-cmd", "true", "--log", "x.log"]) == 2
    assert "not both" in capsys.readouterr().err
