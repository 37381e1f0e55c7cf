"""The text of `symmtui history`: one row per launch (start, verdict, time to ready, each phase, versions),
then the latest ready launch against its usual phases."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from symmtui.core.rules import PHASE_ORDER
from symmtui.launch.history import HistoryEntry
from symmtui.launch.timings import compare, seconds

SHORT = {"launching": "launch", "init distributed": "init", "loading weights": "weights",
         "allocating KV cache": "kv cache", "capturing CUDA graphs": "graphs", "starting HTTP server": "http",
         "warm-up": "warm-up", "ready marker seen, waiting for health": "health"}
"""Column headings for the phases (the names are in the legend under the table)."""


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
    rows_of = list(entries)[-max_rows:]
    seen = {name for e in rows_of for name in e.phases}
    phases = [p for p in PHASE_ORDER if p in seen] + sorted(seen - set(PHASE_ORDER))
    head = ["started", "verdict", "total", *(SHORT.get(p, p) for p in phases), "versions", "cause"]
    rows: list[list[str]] = []
    for e in rows_of:
        total = e.ready_after if e.ready_after is not None else (e.end - e.start if e.end is not None else None)
        rows.append([_when(e.start), e.verdict.replace("_", " "), seconds(total) if total is not None else "-",
                     *(seconds(e.phases[p]) if p in e.phases else "-" for p in phases),
                     _versions(e.versions), e.cause or ""])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    out = []
    for r in [head, *rows]:
        cells = [c.rjust(w) if 2 <= i < len(head) - 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False))]
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
