"""A READY launch's phases against its usual ones (``launch.timings``): read once, carried in the verdict."""

from __future__ import annotations

import os
import time

from symmtui.errors import UserError
from symmtui.judge.readiness import Snapshot
from symmtui.launch.history import History, HistoryEntry
from symmtui.launch.timings import compare, compare_launch
from symmtui.session.outcome import outcome_of


def ready_timings(command_hash: str | None, launch_id: str | None, log_path: str | None,
                  snap: Snapshot) -> tuple[str, ...]:
    """The ``timings: ...`` lines of a READY (its history line is written by then): none when there is no
    earlier ready launch, nothing differs noticeably, or the history cannot be read.

    A READY that is no launch of ours (`wait --config` follows the profile's log, not a launch) is
    compared as it is: its phases against the earlier ready launches of ``command_hash``, leaving out the
    history's entry for the same log file (that launch itself, when `launch` recorded it)."""
    if launch_id is None and command_hash is None:
        return ()
    try:
        entries = History().entries()
    except UserError:
        return ()
    if launch_id is not None:
        comparison = compare_launch(launch_id, entries)
    else:
        same = os.path.realpath(log_path) if log_path else None
        others = [e for e in entries if same is None or os.path.realpath(e.log_path) != same]
        now = time.time()
        elapsed = snap.verdict_elapsed if snap.verdict_elapsed is not None else snap.elapsed
        entry = HistoryEntry(launch_id="(this log)", command_hash=command_hash or "", start=now - elapsed,
                             end=now, verdict="ready", phases=outcome_of(snap).phases)
        comparison = compare(entry, others)
    return tuple(comparison.lines()) if comparison is not None else ()
