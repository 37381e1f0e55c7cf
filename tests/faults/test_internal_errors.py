"""An internal error (a bug) in any verb, the dashboard included, exits non-zero with one line that says where the
details went: a crash file in the state dir (the traceback); absurd figures in the log read as unknown instead
of raising. The bugs here are constructed (an app whose mount divides by zero, a thread that raises): the one
way to reach the path that handles them; the absurd figures are real line shapes with hostile numbers."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from symmtui import boundary
from symmtui.paths import state_dir
from symmtui.ui.app import SymmApp
from symmtui.ui.entry import run_app
from tests.faults.hostile_kit import ROOT
from tests.handclock import LeapClock
from tests.ui.kit import READY_LOG, heartbeats, text, wait_for, watched


class BuggyApp(App[int]):
    def compose(self) -> ComposeResult:
        yield Static("about to fail")

    def on_mount(self) -> None:
        self.set_timer(0.05, self._fail)

    def _fail(self) -> None:
        _ = 1 / 0  # the constructed bug


def _crash_files() -> list[Path]:
    return sorted(state_dir("crashes").glob("crash-*.txt"))


def test_an_exception_in_the_dashboard_exits_2_with_one_line_and_a_crash_file(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual catches it and renders its traceback at exit; the exit status was 0 (a 400-digit shard total: the
    ETA's OverflowError). Now: the traceback goes to a crash file, the verb says so in one line, exit 2."""
    monkeypatch.delenv(boundary.DEBUG_ENV, raising=False)
    before = _crash_files()
    assert boundary.run_checked(lambda: run_app(BuggyApp(), headless=True) or 0) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("symmtui: error: internal error (in the dashboard: ZeroDivisionError: division by zero); "
                          "this is a bug: the details are in "), err
    new = [f for f in _crash_files() if f not in before]
    assert len(new) == 1 and str(new[0]) in err
    assert stat.S_IMODE(new[0].stat().st_mode) == 0o600
    details = new[0].read_text()
    assert "ZeroDivisionError" in details and "_fail" in details and "error: in the dashboard" in details


def test_a_worker_threads_exception_exits_2_naming_the_thread(capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from symmtui import cli

    monkeypatch.delenv(boundary.DEBUG_ENV, raising=False)
    monkeypatch.setattr(threading, "excepthook", cli._thread_error)  # as cli.main sets it

    def body() -> int:
        worker = threading.Thread(target=lambda: {}["missing"], name="symmtui-follow")
        worker.start()
        worker.join()
        return 0  # the verb itself went on: its exit status must still say there was a bug

    assert boundary.run_checked(body) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (in symmtui-follow: KeyError: 'missing')" in err, err
    assert "the details are in " in err


def test_a_worker_threads_exception_ends_a_running_verb_of_the_symmtui_command(tmp_path: Path) -> None:
    """In the `symmtui` command's process (signals installed), the bug ends the verb at once, exit 2; it would
    otherwise have waited out its body (60 s here)."""
    script = textwrap.dedent("""
        import sys, threading, time
        from symmtui import boundary, cli
        threading.excepthook = cli._thread_error
        boundary.stop_on_signals()
        def body():
            threading.Thread(target=lambda: 1 / 0, name="symmtui-engine").start()
            time.sleep(60)
            return 0
        sys.exit(boundary.run_checked(body))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop(boundary.DEBUG_ENV, None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "internal error (in symmtui-engine: ZeroDivisionError" in done.stderr
    assert str(tmp_path / "state" / "symmtui" / "crashes") in done.stderr


# a real SGLang shard line's shape (tests/fixtures/sglang-tp8-ready.log) with absurd figures: constructed
SHARDS = "Loading safetensors checkpoint shards:  44% Completed | 37/{total} [00:10<00:12,  {rate}]\n"


ABSURD_SHARDS = [("9" * 400, "2.10it/s"), ("83", "0.000001it/s"), ("1" + "0" * 5000, "1e400it/s"), ("83", "0.00it/s"),
                 ("83", "1e400it/s")]


@pytest.mark.parametrize(("total", "rate"), ABSURD_SHARDS, ids=[f"{t[:8]}...{len(t)}-{r}" for t, r in ABSURD_SHARDS])
async def test_absurd_shard_figures_show_no_estimate_in_the_dashboard(tmp_path: Path, total: str, rate: str) -> None:
    """A 400-digit shard total raised OverflowError in the ETA (a Textual traceback, then exit status 0); a rate
    of 1e-6 it/s read "about 277777777767500 h". Neither is an estimate: the gauge says there is none."""
    lines = READY_LOG.read_text().splitlines(keepends=True)
    start = lines[:next(i for i, ln in enumerate(lines) if "Load weight begin" in ln) + 1]
    log = tmp_path / "server.log"
    log.write_text("".join(start) + SHARDS.format(total=total, rate=rate))
    clock = LeapClock()
    session = watched(log, clock=clock)
    app = SymmApp(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            eta = app.query_one("#gauge-eta", Static)
            await wait_for(pilot, lambda: "checkpoint shards" in text(app), "the shard line")
            await wait_for(pilot, lambda: "loading weights" in text(app) and str(eta.render()).startswith("ETA"),
                           "the gauge in its loading phase")
            await heartbeats(pilot, clock)  # the Board (its ETA from the line's rate) built and shown again
            assert str(eta.render()).startswith("ETA no history yet"), eta.render()  # no figure, not an absurd one
            assert "277777777767500" not in text(app)
        assert app.return_code in (None, 0)
    finally:
        session.close()
