"""A verdict met while the log's backlog is still being judged (a finished log's served past, before the crash
at its end) is kept in the recording but written only once the node has caught up: the write would hold up
the judging, and the next batches may end that verdict. The file then holds both verdicts, in order."""

from __future__ import annotations

from pathlib import Path

from symmtui.bringup.engine import EngineUpdate
from symmtui.bundle.format import read_bundle
from symmtui.bundle.recorder import Recorder
from symmtui.judge.board import NodeInput, build
from symmtui.judge.verdict import NodeView, findings, ordered_events
from symmtui.launch.envinfo import EnvInfo
from symmtui.session.messages import EngineBatch
from tests.notify.kit import KEYERROR_LOG, READY_LOG, snapshot_of


def _batch(log: Path, caught_up: bool, generation: int) -> EngineBatch:
    snap = snapshot_of(log)
    view = NodeView("h", snap, None, findings(ordered_events(snap)))
    board = build(1, [NodeInput(view, caught_up=caught_up, generation=generation)], 0.0)
    return EngineBatch("h", EngineUpdate((), (), (), snap, generation, 0), str(log), board)


def test_a_verdict_before_the_backlog_is_judged_waits_for_the_catch_up(tmp_path: Path) -> None:
    rec = Recorder(name="p", host="h", command=None, dest=tmp_path / "b.json.gz",
                   env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
    assert rec.ingest(0.0, _batch(READY_LOG, caught_up=False, generation=0)) is False, "written while judging"
    assert rec.ingest(0.1, _batch(KEYERROR_LOG, caught_up=False, generation=1)) is False
    assert rec.ingest(0.2, _batch(KEYERROR_LOG, caught_up=True, generation=1)) is True, "not written when caught up"
    assert rec.ingest(0.3, _batch(KEYERROR_LOG, caught_up=True, generation=1)) is False, "written twice"
    path = rec.write(final=True)
    assert path is not None
    assert [v["state"] for v in read_bundle(path).data["verdicts"]] == ["ready", "crashed"]


def test_a_caught_up_verdict_is_written_at_once(tmp_path: Path) -> None:
    rec = Recorder(name="p", host="h", command=None, dest=tmp_path / "b.json.gz",
                   env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
    assert rec.ingest(0.0, _batch(READY_LOG, caught_up=True, generation=0)) is True
