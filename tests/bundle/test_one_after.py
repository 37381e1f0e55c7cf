"""One "after N s" (issue 31): for the same Board, `wait`'s verdict block, the notification, the bundle's verdict
and its report, and the metrics endpoint say the one figure the Board carries (``NodeBoard.elapsed``), never
one each reader picks from the snapshot. The logs are real fixtures fed at once, so the log's own clock (READY
481 s, CRASHED 14 s after the first line) and the watched time (well under 2 s) differ: the case where readers
that chose for themselves disagreed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from symmtui.bringup.engine import EngineUpdate
from symmtui.bundle.format import read_bundle
from symmtui.bundle.recorder import Recorder
from symmtui.bundle.report import markdown
from symmtui.judge.board import board_of
from symmtui.judge.verdict import NodeView, findings, ordered_events
from symmtui.launch.envinfo import EnvInfo
from symmtui.metrics import BringupMetrics
from symmtui.notify.message import note_of
from symmtui.session.messages import EngineBatch
from symmtui.verbs.printer import verdict_lines
from tests.notify.kit import KEYERROR_LOG, READY_LOG, snapshot_of


@pytest.mark.parametrize(("log", "word", "shown"), [(READY_LOG, "READY", 481.0), (KEYERROR_LOG, "CRASHED", 14.0)],
                         ids=["ready", "crashed"])
def test_every_reader_says_the_boards_after(tmp_path: Path, log: Path, word: str, shown: float) -> None:
    snap = snapshot_of(log)
    board = board_of([NodeView("h", snap, None, findings(ordered_events(snap)))])
    after = board.about.elapsed
    assert after == pytest.approx(shown) and board.about.log_clock
    assert snap.verdict_elapsed is not None and snap.verdict_elapsed < 2.0  # the watched time: not what is said

    block = verdict_lines(board)
    assert block[0].startswith(f"{word} after {after:.1f} s"), block
    assert f"{after:.1f} s after its first line" in "\n".join(block)  # and which clock it is on

    note = note_of(board, name="p", host="h")
    assert note is not None and note.headline.startswith(f"{word} after {after:.1f} s") and note.elapsed == after

    rec = Recorder(name="p", host="h", command=None, dest=tmp_path / "b.json.gz",
                   env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
    rec.ingest(0.0, EngineBatch("h", EngineUpdate((), (), (), snap, 0, 0), str(log), board))
    path = rec.write(final=True)
    assert path is not None
    bundle = read_bundle(path)
    assert [v["elapsed"] for v in bundle.data["verdicts"]] == [round(after, 3)]
    minutes, seconds = divmod(after, 60)
    said = f"after {int(minutes)} min {seconds:04.1f} s" if minutes else f"after {after:.1f} s"
    assert re.search(rf"\*\*{word.title()}\*\* {said}", markdown(bundle), re.I), markdown(bundle)[:400]

    metrics = BringupMetrics(profile="p", nodes=["h"], clock=lambda: 1000.0)
    metrics(EngineBatch("h", EngineUpdate((), (), (), snap, 0, 0), str(log), board))
    assert metrics.current("h")[1] == after  # frozen at the verdict: the Board's figure
