"""History lines and the ETA: medians of earlier successful launches, phase by phase; no history, no ETA."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from symmtui.launch.history import History, HistoryEntry, eta, history_path


def _e(i: int, h: str = "abc", verdict: str = "ready", total: float = 100.0, **phases: float) -> HistoryEntry:
    return HistoryEntry(launch_id=f"l{i}", command_hash=h, start=1000.0 * i, end=1000.0 * i + total,
                        verdict=verdict, phases=phases or {"loading weights": total * 0.8, "warm-up": total * 0.2})


def test_no_history_no_eta() -> None:
    assert eta("abc") is None and eta("abc", "loading weights") is None
    assert History().estimate("abc") is None


def test_eta_is_the_median_of_ready_launches_of_the_same_command() -> None:
    h = History()
    h.append(_e(1, total=100))
    h.append(_e(2, total=300))
    h.append(_e(3, total=200))
    h.append(_e(4, total=5, verdict="crashed"))  # failures do not count
    h.append(_e(5, h="other", total=9999))  # nor other commands
    assert eta("abc") == 200.0
    assert eta("abc", "loading weights") == pytest.approx(160.0)
    assert eta("abc", "no such phase") is None
    est = h.estimate("abc")
    assert est is not None and est.samples == 3 and list(est.phases) == ["loading weights", "warm-up"]
    # 10 s into loading (median 160 s) with warm-up (40 s) still to come
    assert est.remaining("loading weights", 10.0, 30.0) == pytest.approx(150.0 + 40.0)
    assert est.remaining(None, 0.0, 50.0) == pytest.approx(150.0)


def test_a_launch_recorded_twice_counts_once_last_wins() -> None:
    h = History()
    h.append(_e(1, total=100, verdict="stopped"))
    h.append(_e(1, total=100, verdict="ready"))
    assert [e.verdict for e in h.entries()] == ["ready"]


def test_a_launch_is_appended_once_and_its_recorded_entry_returned() -> None:
    h = History()
    h.append(_e(1, total=100))
    with open(history_path(), "ab") as fh:  # a damaged line naming l2 is no record of it
        fh.write(b'{"launch_id": "l2", "verdict": \n')
    first = h.append_once(_e(2, total=100, verdict="ready"))
    again = h.append_once(_e(2, total=5, verdict="stopped"))  # a `stop` finishing the same launch later
    assert first == again and again.verdict == "ready" and h.has("l2") and not h.has("l3")
    assert [e.launch_id for e in h.entries()] == ["l1", "l2"] and h.skipped == 1
    assert history_path().read_bytes().count(b'"launch_id": "l2"') == 2  # the damaged one and one entry


def test_corrupt_lines_are_skipped_and_counted() -> None:
    h = History()
    h.append(_e(1, total=100))
    with open(history_path(), "ab") as fh:
        fh.write(b'{"half a line\n\xff\xfe\n[1, 2]\n')
    h.append(_e(2, total=300))
    assert [e.launch_id for e in h.entries()] == ["l1", "l2"] and h.skipped == 3
    assert eta("abc") == 200.0


def test_history_file_is_user_only() -> None:
    History().append(_e(1))
    mode = stat.S_IMODE(os.stat(history_path()).st_mode)
    assert mode & 0o077 == 0


def test_unknown_verdict_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown verdict"):
        History(tmp_path / "h.jsonl").append(_e(1, verdict="great"))


def test_every_final_readiness_state_maps_to_a_verdict_history_accepts() -> None:
    from symmtui.judge.readiness import State
    from symmtui.launch.history import VERDICTS, verdict_of

    assert verdict_of(State.TIMED_OUT) == "timed_out"
    assert verdict_of(State.READY) == "ready"
    assert verdict_of(State.CRASHED) == "crashed"
    for state in State:
        assert verdict_of(state) in VERDICTS
