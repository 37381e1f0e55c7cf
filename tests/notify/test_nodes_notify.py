"""A [[nodes]] profile notifies its verdict like one server: `wait` (in process) posts "CRASHED on gpu-b" and
a READY to a real loopback webhook server, once each; a STALLED names the node behind."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.build import dashboard_spec
from symmtui.cli import main
from symmtui.judge.board import board_of
from symmtui.judge.readiness import State
from symmtui.judge.verdict import NodeView
from symmtui.notify.message import note_of
from symmtui.notify.notifier import plug_in as notify_plug_in
from symmtui.session.core import Session
from symmtui.session.messages import Bell, SessionMessage
from symmtui.verbs.printer import Printer
from tests.notify.kit import KEYERROR_LOG, READY_LOG, TOKEN, Receiver, receiver, snapshot_of


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    with receiver() as rec:
        yield rec


def _profile(tmp_path: Path, a: Path, b: Path, notify: str) -> Path:
    cfg = tmp_path / "pair.toml"
    cfg.write_text(f'[server]\n\n[[nodes]]\nname = "gpu-a"\nlog = "{a}"\n\n[[nodes]]\nname = "gpu-b"\nlog = "{b}"\n\n'
                   f'[notify]\nbell = false\ndesktop = false\n{notify}\n')
    return cfg


def test_wait_of_a_nodes_profile_posts_crashed_on_the_node(tmp_path: Path, hooks: Receiver,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    before = len(hooks.got)
    cfg = _profile(tmp_path, READY_LOG, KEYERROR_LOG, f'webhook = "{hooks.url("/pair/" + TOKEN)}"')
    assert main(["wait", "--config", str(cfg)]) == 1
    out, err = capsys.readouterr()
    assert "CRASHED on gpu-b" in out
    assert all(line.startswith("symmtui: bundle: ") for line in err.splitlines()), err  # each node's, no warning
    got = hooks.wait_for(before + 1)[before:]
    assert [g.path for g in got] == ["/pair/" + TOKEN]  # once: the verdict, not each node's state
    body = got[0].body
    assert body["state"] == "CRASHED" and body["host"] == "gpu-b" and body["name"] == "pair"
    assert str(body["headline"]).startswith("CRASHED on gpu-b after ")
    assert "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)" in str(body["headline"])
    last = list(body["lines"])[-1]  # type: ignore[call-overload]
    assert last.startswith("nodes: gpu-a ") and last.endswith(", gpu-b crashed")  # gpu-a: wherever it was then
    assert body["log"] == str(KEYERROR_LOG)


def test_launchless_ready_pair_notifies_ready_through_the_dashboards_plug_in(tmp_path: Path, hooks: Receiver) -> None:
    """The dashboard's wiring (its spec's notifier, ringing through the screen), headless: READY once, from the
    head; [notify] bell = false rings nothing."""
    before = len(hooks.got)
    cfg = _profile(tmp_path, READY_LOG, READY_LOG, f'webhook = "{hooks.url("/ready/" + TOKEN)}"\nformat = "slack"')
    seen: list[SessionMessage] = []
    session = Session(dashboard_spec(str(cfg), None, None, record_bundle=False))
    assert session.spec.notify is not None and session.spec.notify.bell_on_screen
    notify_plug_in(session, session.spec.notify)
    session.observe(seen.append)
    session.start()
    try:
        assert Printer(session, io.StringIO()).run().state is State.READY
    finally:
        session.close()  # the notifier's flush
    got = hooks.wait_for(before + 1)[before:]
    assert len(got) == 1 and got[0].path == "/ready/" + TOKEN
    text = str(got[0].body["text"])
    assert text.startswith("*symmtui: READY · pair on gpu-a*\nREADY after ") and "nodes: gpu-a ready, gpu-b ready" in text
    assert not any(isinstance(m, Bell) for m in seen)  # [notify] bell = false


def test_a_stalled_verdict_names_the_node_behind() -> None:
    # real snapshots seen as STALLED / STARTING: gpu-b's (it crashed in an earlier phase) is behind gpu-a's
    stalled = replace(snapshot_of(KEYERROR_LOG), state=State.STALLED, cause=None, detail="no new log line for 300 s")
    starting = replace(snapshot_of(READY_LOG), state=State.STARTING)
    board = board_of([NodeView("gpu-a", starting), NodeView("gpu-b", stalled)])
    note = note_of(board, name="pair", host="h")
    assert note is not None and note.headline.startswith("STALLED on gpu-b after ")
    # the Board words the stall once (why the node behind stalled included); the note and `wait`'s STALLED line
    # (clitext.stalled_line(..., board.detail, ...)) lay those words out
    assert "gpu-b is behind (init distributed): no new log line for 300 s" in board.detail
    assert note.host == "gpu-b" and note.headline.endswith(f": {board.detail}")
    assert note.lines[-1].startswith("nodes: gpu-a ") and note.lines[-1].endswith("gpu-b stalled in init distributed")


def test_a_stalled_verdict_about_a_node_still_moving_says_it_is_behind() -> None:
    """gpu-a stalled late (its log silent), gpu-b still logging in an earlier phase: the verdict names gpu-b,
    the node the other waits for, and the note says so rather than gpu-b's own "phase: ..." detail."""
    stalled = replace(snapshot_of(READY_LOG), state=State.STALLED, cause=None, detail="no new log line for 300 s")
    moving = replace(snapshot_of(KEYERROR_LOG), state=State.STARTING, cause=None, detail="phase: init distributed")
    verdict = board_of([NodeView("gpu-a", stalled), NodeView("gpu-b", moving)])
    note = note_of(verdict, name="pair", host="h")
    assert (verdict.state, verdict.node) == (State.STALLED, "gpu-b")
    assert note is not None and note.headline.startswith("STALLED on gpu-b after ")
    assert "gpu-b is behind (init distributed" in note.headline, note.headline
