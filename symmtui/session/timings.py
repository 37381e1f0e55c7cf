"""The Session observer that compares a launch's phases with its usual ones once it is READY (launch.timings)."""

from __future__ import annotations

import threading

from symmtui.core.readiness import State
from symmtui.errors import UserError
from symmtui.launch.history import HistoryEntry
from symmtui.launch.timings import Comparison, compare, compare_launch
from symmtui.session.messages import EngineBatch, SessionMessage, VerdictReached


class PhaseTimings:
    """On a launch's READY (its history line is written by then), read the history once and keep the
    comparison for the front ends: `wait`/`launch`'s READY block, the gauge, the notification.

    A READY that is no launch of ours (`wait --config` follows the profile's log, not a launch) is
    compared as it is: its phases against the earlier ready launches of ``command_hash``, leaving out the
    history's entry for the same log file (that launch itself, when `launch` recorded it)."""

    def __init__(self, command_hash: str | None = None) -> None:
        self.command_hash = command_hash
        self._lock = threading.Lock()
        self._by_launch: dict[str, Comparison | None] = {}
        self._latest: str | None = None
        self.error: str | None = None
        """Why the history could not be read (the comparison is then missing, nothing else)."""

    def observe(self, message: SessionMessage) -> None:
        """Session observer (the engine thread; one history read per READY launch)."""
        if isinstance(message, EngineBatch) and message.restarted:
            with self._lock:
                self._latest = None  # a relaunch: the last launch's comparison is not this one's
            return
        if not isinstance(message, VerdictReached) or message.snapshot.state is not State.READY:
            return
        if message.launch_id is None and self.command_hash is None:
            return
        from symmtui.launch.history import History

        key = message.launch_id or f"log:{message.log_path}"
        try:
            entries = History().entries()
            if message.launch_id is not None:
                comparison = compare_launch(message.launch_id, entries)
            else:
                comparison = self._unrecorded(message, entries)
        except UserError as exc:
            self.error, comparison = str(exc), None
        with self._lock:
            self._by_launch[key] = comparison
            self._latest = key

    def _unrecorded(self, message: VerdictReached, entries: list[HistoryEntry]) -> Comparison | None:
        """A READY of the profile's log that is no launch this Session knows: compared as it is."""
        import os
        import time

        from symmtui.session.outcome import outcome_of

        same = os.path.realpath(message.log_path) if message.log_path else None
        others = [e for e in entries if same is None or os.path.realpath(e.log_path) != same]
        snap = message.snapshot
        now = time.time()
        elapsed = snap.verdict_elapsed if snap.verdict_elapsed is not None else snap.elapsed
        entry = HistoryEntry(launch_id="(this log)", command_hash=self.command_hash or "", start=now - elapsed,
                             end=now, verdict="ready", phases=outcome_of(snap).phases)
        return compare(entry, others)

    def lines(self, launch_id: str | None = None) -> list[str]:
        """The ``timings: ...`` lines of ``launch_id`` (default: the latest READY launch); none when there
        is no earlier ready launch or nothing differs noticeably."""
        with self._lock:
            key = launch_id if launch_id is not None else self._latest
            found = self._by_launch.get(key) if key is not None else None
        return found.lines() if found is not None else []

    def comparison(self, launch_id: str | None = None) -> Comparison | None:
        with self._lock:
            key = launch_id if launch_id is not None else self._latest
            return self._by_launch.get(key) if key is not None else None
