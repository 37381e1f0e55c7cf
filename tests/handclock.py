"""A clock a test moves by hand: the engine's threads, the dashboard's guards and timers read it; nothing
sleeps for it, so no test races a wall-clock window."""

from __future__ import annotations


class HandClock:
    """``clock()`` is ``clock.now``; ``advance(s)`` moves it on."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
