"""SIGHUP or SIGTERM while Textual starts the dashboard (the `symmtui` command's process, for real): the signal waits
until the app has its own handlers, then the app acts on it (a hang-up closes the Session and exits 129, SIGTERM
ends the app with 143). Raised inside Textual's start instead, a tab hung up while its demo dashboard started
left, 1 run in a few hundred under load, a process that printed its clean-up note and never exited
(tests/ui/test_servetab.py, killed after its 15 s grace)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from symmtui import boundary
    from symmtui.ui.app import SymmApp
    from symmtui.ui.entry import run_app
    from tests.ui.kit import crashed_session

    marks, sig = Path(sys.argv[1]), getattr(signal, sys.argv[2])
    session = crashed_session()
    session.close = lambda: (marks / "closed").touch()

    class Signalled(SymmApp):
        CSS_PATH = str(Path(sys.modules[SymmApp.__module__].__file__).parent / SymmApp.CSS_PATH)

        def compose(self):
            os.kill(os.getpid(), sig)  # while Textual starts: before the app's own handlers (on_mount)
            yield from super().compose()

        def on_mount(self):
            (marks / "mounted").touch()
            super().on_mount()

    boundary.stop_on_signals()  # as the `symmtui` command does
    sys.exit(boundary.run_checked(lambda: run_app(Signalled(session), headless=True)))
""")


@pytest.mark.parametrize(("sig", "code", "marks"), [("SIGHUP", 128 + signal.SIGHUP, {"mounted", "closed"}),
                                                    ("SIGTERM", 128 + signal.SIGTERM, {"mounted"})])
def test_a_signal_while_textual_starts_waits_for_the_apps_own_handler(
    tmp_path: Path, sig: str, code: int, marks: set[str]
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), sig], capture_output=True, text=True,
                          timeout=60, env=env, cwd=ROOT)
    assert done.returncode == code, done.stderr[-2000:]
    assert {p.name for p in tmp_path.iterdir() if p.name != "state"} == marks, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]
