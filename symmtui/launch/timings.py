"""This launch's phases against the usual: the median of the last ready launches of the same command.

The rule: a phase is called out when it took at least SLOWER times its usual time (or at most 1/SLOWER:
faster), and the difference is at least MIN_DIFF seconds or MIN_SHARE of the usual time to ready,
whichever is smaller (seconds of jitter in a 10-minute load are not news; a 20-second load's are), and
more than TICK (phase durations come from the log's timestamps, which SGLang and vLLM print in whole
seconds). The wait for symmtui's own health check after the ready line is not compared. Versions
that changed since the launches compared are named under a slower phase: an upgrade is a usual suspect.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from msgspec import Struct

from symmtui.judge.readiness import READY_WAITING_HEALTH
from symmtui.launch.history import HistoryEntry

SLOWER = 1.5
MIN_DIFF = 5.0
MIN_SHARE = 0.05
TICK = 1.0
LAST = 5
"""How many of the latest earlier ready launches the usual is the median of."""


def seconds(value: float) -> str:
    """``212 s``, ``9.5 s``, ``0.42 s``: whole seconds from 100 s, else two significant digits."""
    if value >= 100:
        return f"{value:.0f} s"
    if value >= 10:
        return f"{value:.0f} s" if value == int(value) else f"{value:.1f} s"
    return f"{value:.2g} s"


class PhaseTiming(Struct, frozen=True):
    """One phase of this launch against its usual time."""

    name: str
    took: float
    usual: float

    @property
    def ratio(self) -> float:
        return self.took / self.usual if self.usual > 0 else float("inf")

    @property
    def slower(self) -> bool:
        return self.took > self.usual

    def text(self) -> str:
        """``loading weights 212 s (usual 95 s, 2.2x slower)``."""
        if self.slower:
            how = f"{self.ratio:.1f}x slower" if self.usual > 0 else "was instant before"
        else:
            how = f"{self.usual / self.took:.1f}x faster" if self.took > 0 else "instant now"
        return f"{self.name} {seconds(self.took)} (usual {seconds(self.usual)}, {how})"


class Comparison(Struct, frozen=True):
    """The phases that differ noticeably from the usual, and the versions changed since the launches compared."""

    samples: int
    """Earlier ready launches the usual is the median of."""
    phases: tuple[PhaseTiming, ...]
    upgrades: tuple[tuple[str, str | None, str | None], ...]
    """(what, before, now) for every version that differs from the latest launch compared (None: absent)."""

    def lines(self) -> list[str]:
        """``timings: ...`` lines (none when nothing differs); an upgrade is named under a slower phase."""
        out = [f"timings: {p.text()}" for p in self.phases]
        if self.upgrades and any(p.slower for p in self.phases):
            changed = ", ".join(f"{name} {before or 'absent'} -> {now or 'absent'}" for name, before, now in self.upgrades)
            out.append(f"timings: slower since an upgrade: {changed} (the {self.samples} launch"
                       f"{'es' if self.samples != 1 else ''} compared ran the old versions)")
        return out


def noticeable(took: float, usual: float, usual_total: float) -> bool:
    """The rule of this module's docstring."""
    floor = min(MIN_DIFF, MIN_SHARE * usual_total)
    if abs(took - usual) < floor or abs(took - usual) <= TICK:
        return False
    if usual <= 0:
        return took > 0
    return took >= SLOWER * usual or took <= usual / SLOWER


def compare(entry: HistoryEntry, entries: Sequence[HistoryEntry]) -> Comparison | None:
    """``entry`` (a ready launch) against the last LAST ready launches of its command that ended before it;
    None when there is none (the first ready launch) or ``entry`` is not ready."""
    if entry.verdict != "ready":
        return None
    earlier = [e for e in entries
               if e.command_hash == entry.command_hash and e.verdict == "ready" and e.launch_id != entry.launch_id
               and e.start < entry.start and e.ready_after is not None]
    earlier = sorted(earlier, key=lambda e: e.start)[-LAST:]
    if not earlier:
        return None
    usual_total = statistics.median([e.ready_after or 0.0 for e in earlier])
    timings: list[PhaseTiming] = []
    for name, took in entry.phases.items():
        if name == READY_WAITING_HEALTH:
            continue  # our probe's backoff, not the server
        before = [e.phases[name] for e in earlier if name in e.phases]
        if not before:
            continue
        usual = statistics.median(before)
        if noticeable(took, usual, usual_total):
            timings.append(PhaseTiming(name, took, usual))
    return Comparison(len(earlier), tuple(timings), upgrades(earlier[-1].versions, entry.versions))


def upgrades(before: Mapping[str, str], now: Mapping[str, str]) -> tuple[tuple[str, str | None, str | None], ...]:
    """The versions that differ, where both launches had theirs read (an empty map: not read, not a change).

    A map of symmtui's version alone was not read past it (the verdict came before the read): only the
    names both maps have are compared then, so what is missing there is not called a removal."""
    if not before or not now:
        return ()
    if _read(before) and _read(now):
        names = list(dict.fromkeys([*before, *now]))
    else:
        names = [n for n in before if n in now]
    return tuple((n, before.get(n), now.get(n)) for n in names if before.get(n) != now.get(n))


def _read(versions: Mapping[str, str]) -> bool:
    """True when more than symmtui's own version was read (the server's packages or the driver's)."""
    return any(name != "symmtui" for name in versions)


def compare_launch(launch_id: str, entries: Sequence[HistoryEntry]) -> Comparison | None:
    """:func:`compare` for the launch ``launch_id`` of the history ``entries`` (None: not in it)."""
    for e in entries:
        if e.launch_id == launch_id:
            return compare(e, entries)
    return None
