"""The ETA from the live progress rate: weights 37/83 at 2.1 shards/s -> "about 22 s", without any history;
with earlier launches (the Session's history ETA) the larger of the two is shown, the live rate naming why.

    meter = RateMeter()
    meter.feed(snapshot)                 # every snapshot shown (the engine's clock: snapshot.elapsed)
    live = live_eta(snapshot, meter)     # LiveEta(rest=21.9, rate=2.1, unit="shards") or None
    about(live.rest)                     # "about 22 s"

The rate is measured over the phase's last WINDOW seconds of the engine's clock; where the bring-up was read
at once (an attach to a running launch: its progress all in the backlog), the rate tqdm printed on the
progress line (``2.10it/s``, ``1.25s/it``) is taken instead.
"""

from __future__ import annotations

import math
import re
from collections import deque

from msgspec import Struct

from symmtui.judge.readiness import Snapshot, State

__all__ = ["MAX_ETA", "WINDOW", "LiveEta", "RateMeter", "about", "combined", "live_eta", "tqdm_rate"]

WINDOW = 60.0  # seconds of progress the rate is measured over
MAX_ETA = 7 * 86400.0
"""An ETA past a week is no estimate (a rate of 1e-6 it/s read "about 277777777767500 h"): unknown."""
UNITS = {"loading weights": "shards", "capturing CUDA graphs": "batches"}
_TQDM = re.compile(r"(?<![\w.+-])(\d+(?:\.\d+)?)\s*(it/s|s/it)\b")  # a whole figure: not the 400 of 1e400it/s


class LiveEta(Struct, frozen=True):
    """Seconds left in the current phase at the live rate (units per second)."""

    rest: float
    rate: float
    done: int
    total: int
    unit: str


class RateMeter:
    """The progress of the current phase over time (a/b counts against the engine's clock)."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.points: deque[tuple[float, int]] = deque(maxlen=512)

    def feed(self, snap: Snapshot) -> None:
        """One snapshot: its phase, progress and clock."""
        if snap.phase != self.phase:
            self.phase = snap.phase
            self.points.clear()
        counts = snap.progress_counts
        if counts is None:
            return
        t = snap.elapsed
        if self.points and self.points[-1][1] == counts[0]:
            return  # no progress since: the rate is measured between the steps themselves
        self.points.append((t, counts[0]))
        while self.points and self.points[0][0] < t - WINDOW and len(self.points) > 2:
            self.points.popleft()

    def rate(self) -> float | None:
        """Steps per second over the window, None until two steps at least 1 s apart were seen."""
        if len(self.points) < 2:
            return None
        (t0, d0), (t1, d1) = self.points[0], self.points[-1]
        if t1 - t0 < 1.0 or d1 <= d0:
            return None
        try:
            return (d1 - d0) / (t1 - t0)
        except OverflowError:
            return None


def tqdm_rate(lines: tuple[str, ...]) -> float | None:
    """The rate tqdm printed on the latest progress line (``2.10it/s``; ``1.25s/it`` is 0.8 per second)."""
    for line in reversed(lines[-3:]):
        m = _TQDM.search(line)
        if m:
            value = float(m.group(1))
            if not 0 < value < math.inf:  # 0, or a figure past a float's range (1e400 reads as inf)
                return None
            return value if m.group(2) == "it/s" else 1.0 / value
    return None


def live_eta(snap: Snapshot, meter: RateMeter) -> LiveEta | None:
    """The rest of the current phase at the live rate (None: no progress counts, or no rate yet)."""
    if snap.state not in (State.STARTING, State.STALLED) or snap.progress_counts is None:
        return None
    done, total = snap.progress_counts
    if total <= 0 or done >= total:
        return None
    rate = meter.rate() or tqdm_rate(snap.last_lines)
    if rate is None or not 0 < rate < math.inf:
        return None
    try:
        rest = (total - done) / rate
    except OverflowError:  # a count too large for a float (a log line of 400 digits)
        return None
    if not 0 <= rest <= MAX_ETA:  # absurd figures are unknown, not "about 277777777767500 h"
        return None
    return LiveEta(rest, rate, done, total, UNITS.get(snap.phase or "", ""))


def combined(history: float | None, live: LiveEta | None) -> float | None:
    """The ETA shown: the history's (the phases after this one included), never below the live rest of this
    phase; the live rest alone without history. An absurd history figure counts as none (None)."""
    if history is not None and not (math.isfinite(history) and 0 <= history <= MAX_ETA):
        history = None
    if live is None:
        return history
    return live.rest if history is None else max(history, live.rest)


def about(seconds: float) -> str:
    """``about 22 s``, ``about 4 min``, ``about 1 h 05 min``; ``unknown`` for no figure (not finite, past MAX_ETA)."""
    if not (math.isfinite(seconds) and seconds <= MAX_ETA):
        return "unknown"
    s = max(0, round(seconds))
    if s < 60:
        return f"about {s} s"
    if s < 3600:
        return f"about {round(s / 60)} min"
    return f"about {s // 3600} h {s % 3600 // 60:02d} min"
