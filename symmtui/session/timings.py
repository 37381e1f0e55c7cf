"""The Session observer that compares a launch's phases with its usual ones once it is READY (launch.timings)."""

from __future__ import annotations

import threading

from symmtui.core.readiness import State
from symmtui.errors import UserError
from symmtui.launch.timings import Comparison, compare_launch
from symmtui.session.messages import EngineBatch, SessionMessage, VerdictReached


class PhaseTimings:
    """On a launch's READY (its history line is written by then), read the history once and keep the
    comparison for the front ends: `wait`/`launch`'s READY block, the gauge, the notification."""

    def __init__(self) -> None:
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
        if not isinstance(message, VerdictReached) or message.launch_id is None:
            return
        if message.snapshot.state is not State.READY:
            return
        from symmtui.launch.history import History

        try:
            comparison = compare_launch(message.launch_id, History().entries())
        except UserError as exc:
            self.error, comparison = str(exc), None
        with self._lock:
            self._by_launch[message.launch_id] = comparison
            self._latest = message.launch_id

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
