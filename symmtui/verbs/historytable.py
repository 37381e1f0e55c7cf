"""The text of `symmtui history`: one row per launch (its number, id, start, verdict, time to ready, each phase,
versions), then the latest ready launch against its usual phases; and of `history --diff`: what changed
between two launches (``launch.changes``)."""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Sequence
from typing import Any

from symmtui.errors import UserError
from symmtui.judge.rules import PHASE_ORDER
from symmtui.launch import changes
from symmtui.launch.history import HistoryEntry
from symmtui.launch.timings import compare, seconds

SHORT = {"launching": "launch", "init distributed": "init", "loading weights": "weights",
         "allocating KV cache": "kv cache", "capturing CUDA graphs": "graphs", "starting HTTP server": "http",
         "warm-up": "warm-up", "ready marker seen, waiting for health": "health"}
"""Column headings for the phases (the names are in the legend under the table)."""


ID_CHARS = 8  # of a launch id in the table (--diff takes any unique start of one, from 4 characters)


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _versions(v: dict[str, str] | Any) -> str:
    shown = [f"{k} {val}" for k, val in dict(v).items() if k != "symmtui"]
    if "symmtui" in v:
        shown.append(f"symmtui {v['symmtui']}")
    return ", ".join(shown) or "-"


def table(entries: Sequence[HistoryEntry], max_rows: int) -> list[str]:
    """The table's lines (oldest first, at most ``max_rows`` of the latest), its legend and the comparison."""
    if not entries:
        return ["no launches recorded yet (symmtui launch, or r in the dashboard, records them)"]
    first = max(0, len(entries) - max_rows)
    rows_of = list(entries)[first:]
    seen = {name for e in rows_of for name in e.phases}
    phases = [p for p in PHASE_ORDER if p in seen] + sorted(seen - set(PHASE_ORDER))
    head = ["#", "id", "started", "verdict", "total", *(SHORT.get(p, p) for p in phases), "versions", "cause"]
    rows: list[list[str]] = []
    for n, e in enumerate(rows_of, start=first + 1):
        total = e.ready_after if e.ready_after is not None else (e.end - e.start if e.end is not None else None)
        rows.append([str(n), e.launch_id[:ID_CHARS], _when(e.start), e.verdict.replace("_", " "),
                     seconds(total) if total is not None else "-",
                     *(seconds(e.phases[p]) if p in e.phases else "-" for p in phases),
                     _versions(e.versions), e.cause or ""])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    out = []
    for r in [head, *rows]:
        cells = [c.rjust(w) if i == 0 or 4 <= i < len(head) - 2 else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths, strict=False))]
        out.append("  ".join([*cells, r[-1]]).rstrip())
    if len(entries) > len(rows_of):
        out.insert(1, f"(the latest {len(rows_of)} of {len(entries)} launches; --json gives them all)")
    legend = ", ".join(f"{SHORT[p]} = {p}" for p in phases if p in SHORT and SHORT[p] != p)
    if legend:
        out.append(f"phases: {legend}")
    last_ready = next((e for e in reversed(entries) if e.verdict == "ready"), None)
    if last_ready is not None:
        found = compare(last_ready, entries)
        if found is not None:
            lines = found.lines()
            against = f"the last ready launch ({_when(last_ready.start)}) against the {found.samples} before it"
            out.append(f"{against}: no phase differs noticeably" if not lines else f"{against}:")
            out += [f"  {line}" for line in lines]
    return out


def as_json(entries: Sequence[HistoryEntry], path: str, skipped: int) -> dict[str, Any]:
    """``{"history": path, "skipped": n, "launches": [entry + ready_after]}``, oldest first."""
    return {"history": path, "skipped": skipped,
            "launches": [{**e.to_json(), "ready_after": e.ready_after} for e in entries]}


def pick(entries: Sequence[HistoryEntry], name: str) -> HistoryEntry:
    """The launch ``name`` names: a number of the table's ``#`` column (1 the oldest, -1 the last), or a launch id
    or a unique start of one; UserError (one line, what to give) otherwise."""
    try:
        n = int(name)
    except ValueError:
        n = None
    if n is not None and n != 0 and -len(entries) <= n <= len(entries):
        return entries[n - 1 if n > 0 else n]
    hits = [e for e in entries if len(name) >= 4 and e.launch_id.startswith(name)]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise UserError(f"{name!r} starts {len(hits)} launch ids; give more of it")
    raise UserError(f"no launch {name!r} in the history of {len(entries)} launch{'es' if len(entries) != 1 else ''}: "
                    "give a number of the # column of `symmtui history` (-1 the last) or a launch id")


def _about(e: HistoryEntry | None) -> dict[str, Any] | None:
    return None if e is None else {"launch_id": e.launch_id, "start": e.start, "verdict": e.verdict,
                                   "profile_key": e.profile_key}


def diff(entries: Sequence[HistoryEntry], names: Sequence[str], *,
         now: float | None = None) -> tuple[list[str], dict[str, Any]]:
    """`history --diff [A] [B]`: (its lines, its JSON form). Two launches: what changed from A to B; one: that
    launch against the last READY launch of its profile before it; none: the last launch so."""
    at = time.time() if now is None else now
    if len(names) > 2:
        raise UserError("--diff takes at most two launches: A B (what changed from A to B)")
    if not entries:
        return (["no launches recorded yet (symmtui launch, or r in the dashboard, records them)"],
                {"now": None, "then": None, "since": None, "changes": []})
    if len(names) == 2:
        then: HistoryEntry | None = pick(entries, names[0])
        current = pick(entries, names[1])
        assert then is not None
        diffs = changes.compare(current, then, hints=current.named)
        said = changes.worded(diffs, then, at, label=f"launch {then.launch_id[:ID_CHARS]} ({then.verdict.replace('_', ' ')})")
    else:
        current = pick(entries, names[0]) if names else entries[-1]
        said, diffs = changes.since_ready(current, entries, hints=current.named, at=at)
        then = changes.last_ready(current, entries, lambda e: e.profile_key == current.profile_key)
    head = (f"launch {current.launch_id[:ID_CHARS]} ({_when(current.start)}, {current.verdict.replace('_', ' ')}): "
            f"{said.since}")
    lines = [head + (":" if said.lines else ""), *(f"  {t}" for t in said.lines)]
    doc = {"now": _about(current), "then": _about(then), "since": said.since,
           "changes": [{"kind": d.kind, "name": d.name, "text": d.text, "named": d.rank == changes.NAMED}
                       for d in diffs]}
    return lines, doc
