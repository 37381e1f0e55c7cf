"""Per-rank progress: the rank each log line names, and each rank's last phase and last line time."""

from __future__ import annotations

import re
from collections.abc import Iterable

from msgspec import Struct

from symmtui.judge.rules import PHASE_ORDER, PHASE_READY
from symmtui.logs.lineparts import rank_tags as rank_tags  # re-exported: the one rank-tag rule lives there
from symmtui.logs.lineparts import record_source, split_prefix

_INDEX = {p: i for i, p in enumerate(PHASE_ORDER)}


class RankTag(Struct, frozen=True):
    """The rank a line (or a process title) names: ``label`` ("TP3", "DP1 TP3"), the pid if printed."""

    label: str
    pid: int | None = None


def rank_of_line(plain: str) -> RankTag | None:
    """The rank the record prefix of ``plain`` names (after container prefixes and a timestamp), or None."""
    pre = split_prefix(plain)
    return RankTag(pre.label, pre.pid) if pre.label is not None else None


def sort_key(label: str) -> tuple[tuple[str, int], ...]:
    """Orders "TP2" before "TP10", "DP0 TP1" before "DP1 TP0"."""
    parts = re.findall(r"([A-Za-z_ ]*?)(\d+)", label)
    return tuple((p.strip(), int(n)) for p, n in parts) or ((label, 0),)


def compact(labels: Iterable[str]) -> str:
    """"TP0-TP4, TP6, TP7": runs of three or more consecutive ranks with the same prefix as a range."""
    items = sorted(set(labels), key=sort_key)
    out: list[str] = []
    run: list[tuple[str, int, str]] = []

    def flush() -> None:
        if len(run) >= 3:
            out.append(f"{run[0][2]}-{run[-1][2]}")
        else:
            out.extend(r[2] for r in run)
        run.clear()

    for label in items:
        m = re.fullmatch(r"(.*?)(\d+)", label)
        if m is None:
            flush()
            out.append(label)
            continue
        head, n = m.group(1), int(m.group(2))
        if run and run[-1][0] == head and run[-1][1] + 1 == n:
            run.append((head, n, label))
            continue
        flush()
        run.append((head, n, label))
    flush()
    return ", ".join(out)


class RankState(Struct, frozen=True):
    """One rank: the last phase its lines named, when its last line came, how many lines."""

    label: str
    phase: str | None
    last_line: float
    lines: int
    pid: int | None
    finished: str | None = None
    """The last phase this rank's lines said it finished ("Init torch distributed ends")."""

    def score(self) -> float:
        """How far it got: the phase's place in the bring-up, half a step more once finished."""
        if self.phase is None:
            return -1.0
        return _INDEX.get(self.phase, -1) + (0.5 if self.finished == self.phase else 0.0)


class RankSummary(Struct, frozen=True):
    """Who is behind: None fields when every rank is level."""

    total: int
    ranks: tuple[RankState, ...]
    ahead_phase: str | None
    behind: tuple[RankState, ...]
    text: str
    """One line, e.g. "7/8 ranks finished loading weights; TP5 still loading weights, silent 143 s"."""


SILENT_FACTOR = 5.0  # a rank silent this many times longer than the median rank (and > SILENT_MIN) is behind
SILENT_MIN = 30.0


class _Rank:
    """One rank's running state (mutable: a board is fed every line of a flood)."""

    __slots__ = ("finished", "label", "last_line", "lines", "phase", "pid")

    def __init__(self, label: str, pid: int | None) -> None:
        self.label = label
        self.pid = pid
        self.phase: str | None = None
        self.finished: str | None = None
        self.last_line = 0.0
        self.lines = 0

    def state(self) -> RankState:
        return RankState(self.label, self.phase, self.last_line, self.lines, self.pid, self.finished)


class RankBoard:
    """Feed it records (with the phase the rules gave each, if any); ask who is behind."""

    def __init__(self) -> None:
        self._ranks: dict[str, _Rank] = {}

    def reset(self) -> None:
        self._ranks.clear()

    def __bool__(self) -> bool:
        return bool(self._ranks)

    def feed(self, plain: str, now: float, phase: str | None = None, ends: str | None = None) -> str | None:
        """One record: the rank it names (its label, if any) has a new last line (and the phase it starts or ends; "ready"
        is the server's, not a rank's: only TP0 logs the batches it serves)."""
        _key, label, pid = record_source(plain)
        if label is None:
            return None
        rank = self._bump(label, pid, now, 1)
        if phase == PHASE_READY:
            phase = None
        if phase is not None:
            rank.phase = phase
        elif rank.phase is None and ends is not None:
            rank.phase = ends
        if ends is not None:
            rank.finished = ends
        return label

    def _bump(self, label: str, pid: int | None, now: float, n: int) -> _Rank:
        rank = self._ranks.get(label)
        if rank is None:
            rank = self._ranks[label] = _Rank(label, pid)
        elif pid is not None:
            rank.pid = pid
        rank.last_line = now
        rank.lines += n
        return rank

    def states(self) -> tuple[RankState, ...]:
        return tuple(sorted((r.state() for r in self._ranks.values()), key=lambda r: sort_key(r.label)))

    def pids(self) -> dict[int, str]:
        """pid -> rank label, where the log printed the pid (vLLM)."""
        return {r.pid: r.label for r in self._ranks.values() if r.pid is not None}

    def summary(self, now: float) -> RankSummary | None:
        """Who is behind now; None for a log without rank prefixes (or with one rank)."""
        ranks = self.states()
        if len(ranks) < 2:
            return None
        lead = max(ranks, key=RankState.score)
        ahead = lead.phase
        behind: list[RankState] = []
        text = ""
        if ahead is not None:
            behind = [r for r in ranks if r.score() < lead.score()]
        silences = sorted(now - r.last_line for r in ranks)
        median = silences[len(silences) // 2]
        if not behind:
            behind = [r for r in ranks
                      if now - r.last_line > max(SILENT_MIN, median * SILENT_FACTOR)]
            if behind:
                text = f"{len(ranks) - len(behind)}/{len(ranks)} ranks still logging; " + "; ".join(
                    f"{r.label} silent {now - r.last_line:.0f} s" for r in behind)
        elif ahead is not None:
            done = len(ranks) - len(behind)
            level = {r.phase for r in behind}
            if len(level) == 1 and None not in level:
                (phase,) = level
                silent = max(now - r.last_line for r in behind)
                text = (f"{done}/{len(ranks)} ranks finished {phase}; {compact(r.label for r in behind)} "
                        f"still {phase}, silent {silent:.0f} s")
                return RankSummary(len(ranks), ranks, ahead, tuple(behind), text)
            by_phase: dict[str, list[RankState]] = {}
            for r in behind:
                by_phase.setdefault(r.phase or "no phase yet", []).append(r)
            parts = []
            for phase, rs in by_phase.items():
                silent = max(now - r.last_line for r in rs)
                parts.append(f"{compact(r.label for r in rs)} still {phase}" if phase != "no phase yet"
                             else f"{compact(r.label for r in rs)} no phase yet")
                parts[-1] += f", silent {silent:.0f} s"
            text = f"{done}/{len(ranks)} ranks reached {ahead}; " + "; ".join(parts)
        return RankSummary(len(ranks), ranks, ahead if behind else None, tuple(behind), text)
