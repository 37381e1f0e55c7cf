"""A clock a test moves by hand: the engine's threads, the dashboard's guards and timers read it; nothing
sleeps for it, so no test races a wall-clock window."""

from __future__ import annotations

import time


class HandClock:
    """``clock()`` is ``clock.now``; ``advance(s)`` moves it on."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class LeapClock:
    """Real monotonic time plus the leaps a test makes: ``clock()`` runs on as time does, ``leap(s)`` jumps it
    ``s`` seconds ahead (a heartbeat, a stall or a timeout falls due at once, within the engine's idle tick)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.ahead

    def leap(self, seconds: float) -> None:
        self.ahead += seconds
