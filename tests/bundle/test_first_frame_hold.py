"""Work the dashboard's first frame does not show waits for that frame (boundary.after_first_frame): the bundle's
environment capture and its worker start after it, and a recorder closed before any frame still writes at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui import boundary
from symmtui.bundle.format import read_bundle
from symmtui.bundle.recorder import Recorder
from symmtui.launch.envinfo import EnvInfo
from tests.bundle.test_recorder_limits import _batch
from tests.ui.kit import CRASH_LOG, read_lines, replay

NEVER = 600.0  # FIRST_FRAME_WAIT in these tests: a wait that ends only because something released it


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A dashboard's start: the hold on, its bound out of any test's reach; released again afterwards."""
    monkeypatch.setattr(boundary, "FIRST_FRAME_WAIT", NEVER)
    boundary.hold_for_first_frame()
    try:
        yield
    finally:
        boundary.release_held()


def test_nothing_is_held_unless_a_dashboard_starts() -> None:
    done = threading.Event()
    t = threading.Thread(target=lambda: (boundary.after_first_frame(), done.set()))
    t.start()
    t.join(30)
    assert done.is_set()


def test_the_environment_capture_waits_for_the_first_frame(held: None, tmp_path: Path) -> None:
    order: list[str] = []
    captured = threading.Event()

    def env() -> EnvInfo:
        order.append("captured")
        captured.set()
        return EnvInfo(taken_at=0.0, symmtui="test")

    rec = Recorder(name="t", host="h", command=None, dest=tmp_path / "b.json.gz", env=env)
    rec.start()
    order.append("frame")
    boundary.started()  # the first frame is drawn
    assert captured.wait(30)
    assert order == ["frame", "captured"]
    rec.close()


def test_a_recorder_closed_before_any_frame_writes_its_bundle(held: None, tmp_path: Path) -> None:
    lines = read_lines(CRASH_LOG)
    events, snap = replay(lines)
    dest = tmp_path / "b.json.gz"
    rec = Recorder(name="t", host="h", command=None, dest=dest, env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
    rec.start()
    rec.observe(_batch(tuple(lines), tuple(events), snap))
    closing = threading.Thread(target=rec.close)
    closing.start()
    closing.join(30)  # with the hold kept, the worker would sit out NEVER seconds and close() with it
    assert not closing.is_alive()
    assert read_bundle(dest).lines[-1][2] == lines[-1].no
