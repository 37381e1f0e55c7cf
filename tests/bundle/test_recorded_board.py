"""Report and replay show what was shown live: the cause and next step of a user's own catalogue entry are
recorded on the Board, so a reader without that entry (another machine, the entry since removed) shows them."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from symmtui.bundle.format import SUFFIX, read_bundle
from symmtui.bundle.replay import Recording, ReplaySession
from symmtui.judge.readiness import State
from symmtui.session.messages import EngineBatch
from symmtui.tables.catalogue import user_file
from tests.core.engine_kit import env, symmtui_cmd

CAUSE = "OWN-CATALOGUE-CAUSE: the widget melted"
ACTION = "replace the widget, then relaunch"
# A user's entry for a line of their own server's (constructed input: no engine prints it)
ENTRY = f"""[[entry]]
id = "our-widget-melted"
kind = "crash"
patterns = ['ERRX widget melted']
summary = "the widget melted"
cause = "{CAUSE}"
action = {{ type = "investigate", text = "{ACTION}" }}
"""


def test_report_and_replay_show_the_recorded_cause_without_the_users_entry(tmp_path: Path) -> None:
    user_file().parent.mkdir(parents=True, exist_ok=True)
    user_file().write_text(ENTRY)
    log = tmp_path / "server.log"
    log.write_text("[2026-12-01 10:00:00 TP0] Init torch distributed begin.\n"
                   "[2026-12-01 10:00:01 TP0] ERRX widget melted\n")
    bundle = tmp_path / f"run{SUFFIX}"
    r = subprocess.run(symmtui_cmd("wait", "--log", str(log), "--timeout", "20", "--bundle", str(bundle)),
                       capture_output=True, text=True, timeout=120, env=env())
    assert r.returncode == 1, r.stdout + r.stderr
    assert CAUSE in r.stdout and ACTION in r.stdout
    user_file().unlink()  # the reader has the shipped catalogue only

    report = subprocess.run(symmtui_cmd("report", str(bundle)), capture_output=True, text=True, timeout=60, env=env())
    assert report.returncode == 0, report.stderr
    assert CAUSE in report.stdout and ACTION in report.stdout

    session = ReplaySession(Recording(read_bundle(bundle)), speed=1000.0, sample_gpus=False)
    box = session.attach(lambda: None)
    try:
        boards = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (boards and boards[-1].state is State.CRASHED
                                                   and session.ended.is_set()):
            box.wait(0.2)
            boards += [m.board for m in box.take() if isinstance(m, EngineBatch)]
    finally:
        session.close()
    said = boards[-1].cause
    assert boards[-1].state is State.CRASHED and said is not None
    assert (said.cause, said.command, said.entry) == (CAUSE, ACTION, "our-widget-melted")
    assert said.where == "line 2"
