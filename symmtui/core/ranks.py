"""Per-rank progress: the rank each log line names, and each rank's last phase and last line time."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from symmtui.core.rules import PHASE_ORDER

# SGLang: "[2026-11-29 09:40:17 TP3] ", "[2026-11-29 09:40:17 DP1 TP3 EP3] ", "[... PP0 TP3] "
_SGLANG = re.compile(r"\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?((?: [A-Z][A-Z_]{1,7}\d+)+)\]")
# vLLM: "(VllmWorker TP3 pid=12)", "(Worker_TP3 pid=9)", "(EngineCore_DP0 pid=5)",
# "(VllmWorker rank=1 pid=236)", "(RayWorkerWrapper pid=77, ip=10.0.0.2)", "(VllmWorkerProcess pid=31)"
_VLLM = re.compile(r"\((\w+?)((?:[ _][A-Z]{2}\d+)*)(?: rank=(\d+))? pid=(\d+)(?:, ip=([\w.:-]+))?\)")
_TAG = re.compile(r"(?<![A-Za-z])((?:DP|PP|TP|EP|CP|NP)\d+)")
_NOT_RANKS = frozenset({"APIServer", "EngineCore", "Worker", "VllmWorker"})
"""vLLM process names that are no rank without a tag (the API server; an engine core of one rank)."""

_INDEX = {p: i for i, p in enumerate(PHASE_ORDER)}


@dataclass(frozen=True)
class RankTag:
    """The rank a line (or a process title) names: ``label`` ("TP3", "DP1 TP3"), the pid if printed."""

    label: str
    pid: int | None = None


def rank_tags(text: str) -> str:
    """The rank tags in ``text`` joined by spaces: "DP1 TP3"."""
    return " ".join(_TAG.findall(text))


def rank_of_line(plain: str) -> RankTag | None:
    """The rank prefix at the start of ``plain`` (after a timestamp), or None."""
    head = plain[:160]
    m = _SGLANG.match(head)
    if m is not None:
        tags = rank_tags(m.group(1))
        return RankTag(tags) if tags else None
    m = _VLLM.match(head)
    if m is not None:
        name, tagtext, rank, pid, ip = m.group(1), m.group(2), m.group(3), int(m.group(4)), m.group(5)
        tags = rank_tags(tagtext) or rank_tags(name.replace("_", " "))
        if tags:
            return RankTag(tags, pid)
        if rank is not None:
            return RankTag(f"rank {rank}", pid)
        if name in _NOT_RANKS or name.startswith("EngineCore"):
            return None
        return RankTag(f"{name} pid {pid}" + (f" @{ip}" if ip else ""), pid)
    return None


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


@dataclass(frozen=True)
class RankState:
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


@dataclass(frozen=True)
class RankSummary:
    """Who is behind: None fields when every rank is level."""

    total: int
    ranks: tuple[RankState, ...]
    ahead_phase: str | None
    behind: tuple[RankState, ...]
    text: str
    """One line, e.g. "7/8 ranks finished loading weights; TP5 still loading weights, silent 143 s"."""


SILENT_FACTOR = 5.0  # a rank silent this many times longer than the median rank (and > SILENT_MIN) is behind
SILENT_MIN = 30.0


class RankBoard:
    """Feed it lines (with the phase the rules gave each, if any); ask who is behind."""

    def __init__(self) -> None:
        self._ranks: dict[str, RankState] = {}

    def reset(self) -> None:
        self._ranks.clear()

    def __bool__(self) -> bool:
        return bool(self._ranks)

    def feed(self, plain: str, now: float, phase: str | None = None, ends: str | None = None) -> RankTag | None:
        """One line: the rank it names (if any) has a new last line (and the phase it starts or ends)."""
        tag = rank_of_line(plain)
        if tag is None:
            return None
        old = self._ranks.get(tag.label)
        if old is None:
            self._ranks[tag.label] = RankState(tag.label, phase or ends, now, 1, tag.pid, ends)
        else:
            self._ranks[tag.label] = RankState(tag.label, phase or old.phase or ends, now, old.lines + 1,
                                               tag.pid if tag.pid is not None else old.pid, ends or old.finished)
        return tag

    def states(self) -> tuple[RankState, ...]:
        return tuple(sorted(self._ranks.values(), key=lambda r: sort_key(r.label)))

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
