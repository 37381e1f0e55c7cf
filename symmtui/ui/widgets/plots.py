"""Plots of GPU memory and utilisation over time, per GPU, the last 10 minutes, with the bring-up's phases
marked on the time axis (so "memory rose during capture" can be seen): the samples kept, bucketed into the
columns there are, drawn with eighth blocks.

    history = GpuHistory()              # the GPU panel feeds it every sampling round
    history.add(snapshot)
    marks = phase_marks(readiness_snapshot, time.monotonic(), time.time())
    GpuPlots().show(history, marks)     # a Static: one chart pair per GPU, a shared time axis, a legend
"""

from __future__ import annotations

from collections import deque

from msgspec import Struct
from textual.content import Content
from textual.widgets import Static

from symmtui.gpu.sampler import GpuSnapshot
from symmtui.judge.readiness import Snapshot
from symmtui.ui.widgets.fmt import gib, short_gpu_name

__all__ = ["WINDOW", "GpuHistory", "GpuPlots", "Point", "bars", "buckets", "phase_marks", "render_plots"]

WINDOW = 600.0  # seconds plotted: the last 10 minutes
CHART_ROWS = 3  # rows per chart
_EIGHTHS = " ▁▂▃▄▅▆▇█"


class Point(Struct, frozen=True):
    """One GPU in one round: when (wall clock), memory used / total (bytes), utilisation (%)."""

    t: float
    used: float | None
    total: float | None
    util: float | None


class GpuHistory:
    """The last WINDOW seconds of every GPU's rounds (bounded: at most ``limit`` points per GPU)."""

    def __init__(self, limit: int = 3600) -> None:
        self.points: dict[int, deque[Point]] = {}
        self.names: dict[int, str] = {}
        self._limit = limit

    def add(self, snapshot: GpuSnapshot) -> None:
        """Keep one sampling round."""
        for info, sample in zip(snapshot.infos, snapshot.samples, strict=False):
            def num(v: object) -> float | None:
                return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

            series = self.points.setdefault(info.index, deque(maxlen=self._limit))
            series.append(Point(snapshot.time, num(sample.memory_used), num(info.memory_total),
                                num(sample.utilization_gpu)))
            self.names[info.index] = short_gpu_name(str(info.name))
            while series and series[0].t < snapshot.time - WINDOW:
                series.popleft()

    @property
    def latest(self) -> float | None:
        """The time of the newest round kept."""
        ends = [s[-1].t for s in self.points.values() if s]
        return max(ends) if ends else None


def phase_marks(snap: Snapshot | None, mono_now: float, wall_now: float) -> list[tuple[float, str]]:
    """When (wall clock) each phase of the bring-up began: (time, name). A snapshot's clock is the engine's
    monotonic one; ``mono_now`` and ``wall_now`` are both clocks read at the same moment."""
    if snap is None:
        return []
    offset = wall_now - mono_now
    return [(offset + snap.started_at + span.start, span.name) for span in snap.phases]


def buckets(values: list[tuple[float, float]], t0: float, t1: float, width: int, *, last: bool) -> list[float | None]:
    """``values`` (time, value) in ``width`` equal columns over [t0, t1]: each column's last value (``last``)
    or mean; None where a column has no value."""
    out: list[list[float]] = [[] for _ in range(width)]
    span = max(t1 - t0, 1e-9)
    for t, v in values:
        if t0 <= t <= t1:
            out[min(width - 1, int((t - t0) / span * width))].append(v)
    return [None if not col else (col[-1] if last else sum(col) / len(col)) for col in out]


def bars(values: list[float | None], rows: int) -> list[str]:
    """Fractions (0..1, None: no data) as ``rows`` lines of eighth blocks, top line first."""
    lines = []
    for r in range(rows - 1, -1, -1):
        line = []
        for v in values:
            if v is None:
                line.append(" ")
                continue
            eighths = round(max(0.0, min(1.0, v)) * rows * 8)
            line.append(_EIGHTHS[max(0, min(8, eighths - r * 8))])
        lines.append("".join(line))
    return lines


def _column(t: float, t0: float, t1: float, width: int) -> int | None:
    if not t0 <= t <= t1:
        return None
    return min(width - 1, int((t - t0) / max(t1 - t0, 1e-9) * width))


def _chart(label: str, fractions: list[float | None], mark_cols: set[int], style: str) -> list[Content]:
    rows = bars(fractions, CHART_ROWS)
    out = []
    for i, line in enumerate(rows):
        parts: list[Content | str | tuple[str, str]] = [(f"{label if i == 0 else '':<9}", "$muted")]
        for col, ch in enumerate(line):
            if col in mark_cols and ch == " ":
                parts.append(("┊", "$accent"))
            else:
                parts.append((ch, style))
        out.append(Content.assemble(*parts))
    return out


def render_plots(history: GpuHistory, marks: list[tuple[float, str]], width: int, now: float | None = None) -> Content:
    """Every GPU's memory and utilisation charts over the last WINDOW seconds, the phases marked (┊ and a
    number under the axis), the axis in minutes before now, and the legend of the phases."""
    now = now if now is not None else history.latest
    if now is None or not history.points:
        return Content.styled("no GPU sample yet", "$muted")
    cols = max(10, width - 10)
    t0 = now - WINDOW
    shown = [(t, name) for t, name in marks if t0 <= t <= now]
    mark_cols = {c for t, _ in shown if (c := _column(t, t0, now, cols)) is not None}
    lines: list[Content] = []
    for index in sorted(history.points):
        series = list(history.points[index])
        last = series[-1]
        mem = [(p.t, p.used / p.total) for p in series if p.used is not None and p.total]
        util = [(p.t, p.util / 100.0) for p in series if p.util is not None]
        head = f"GPU {index}  {history.names.get(index, '')}"
        if last.used is not None and last.total:
            head += f"   memory {gib(last.used)}/{gib(last.total)} GiB"
        if last.util is not None:
            head += f"   util {last.util:.0f} %"
        lines.append(Content.styled(head, "bold"))
        lines += _chart("memory", buckets(mem, t0, now, cols, last=True), mark_cols, "$gpu-mem-used")
        lines += _chart("util", buckets(util, t0, now, cols, last=False), mark_cols, "$gpu-spark")
    axis = ["─"] * cols
    labels = [" "] * cols
    for minute in range(0, int(WINDOW // 60) + 1, 2):
        c = _column(now - minute * 60, t0, now, cols)
        if c is not None:
            axis[c] = "┴"
            text = "now" if minute == 0 else f"-{minute}m"
            start = max(0, min(cols - len(text), c - len(text) + 1 if minute == 0 else c - len(text) // 2))
            labels[start : start + len(text)] = list(text)
    numbers = [" "] * cols
    for k, (t, _name) in enumerate(shown, 1):
        c = _column(t, t0, now, cols)
        if c is not None:
            numbers[c] = str(k % 10)
    key = [Content.assemble(("phases   ", "$muted"), ("".join(numbers), "bold $accent")),
           Content.assemble((" " * 9, ""), ("".join(axis), "$muted")),
           Content.assemble((" " * 9, ""), ("".join(labels), "$muted"))]
    if shown:
        legend = "   ".join(f"{k % 10} {name}" for k, (_t, name) in enumerate(shown, 1))
        key.append(Content.assemble(("         ", ""), (legend, "$accent")))
    else:
        key.append(Content.styled("         no phase began in these 10 minutes", "$muted"))
    # the key above the charts (on screen without scrolling) and the axis again below them
    return Content("\n").join([*key, Content(""), *lines, *key[:3]])


class GpuPlots(Static):
    """The plots, drawn for the width it has."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.history = GpuHistory()
        self.marks: list[tuple[float, str]] = []

    def show(self, history: GpuHistory, marks: list[tuple[float, str]]) -> None:
        self.history, self.marks = history, marks
        self.update(render_plots(history, marks, self.size.width or 100))

    def on_resize(self) -> None:
        self.update(render_plots(self.history, self.marks, self.size.width or 100))
