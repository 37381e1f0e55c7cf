"""GPU panel: one row per GPU (memory bar, sparkline, util, temp, power, #procs) and the processes of the selected one."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from msgspec import Struct
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from symmtui.gpu.results import NA, GpuInfo, GpuProcess, GpuSample, is_na
from symmtui.gpu.sampler import GpuSnapshot
from symmtui.ui.widgets.fmt import fit, gib, memory_bar, set_content, short_gpu_name, sparkline
from symmtui.ui.widgets.plots import GpuHistory

HIGH_MEMORY = 0.92  # fraction of total at which the bar turns to the "high" colour
SPARK_POINTS = 60
SLOW_ROUND = 0.5  # seconds: a sampling round this slow is named in the panel's border


def _num(value: object) -> float | None:
    """A sampled number, or None when NVML said n/a."""
    if value is NA or value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _procs(sample: GpuSample) -> tuple[GpuProcess, ...]:
    procs = sample.processes
    return procs if isinstance(procs, tuple) else ()


def _command(proc: GpuProcess) -> str:
    if not is_na(proc.cmdline) and proc.cmdline:
        return " ".join(proc.cmdline)  # type: ignore[arg-type]
    return "?" if is_na(proc.name) else str(proc.name)


def _show(value: object, fmt: str) -> str:
    number = _num(value)
    return "n/a" if number is None else fmt.format(number)


class _Columns(Struct, frozen=True):
    name: int
    bar: int
    spark: int
    power: bool


def _columns(width: int) -> _Columns:
    """Choose column widths for the space we have (fixed columns take 34 cells, power 6 more)."""
    power = width >= 96
    free = width - 36 - (6 if power else 0)
    if free >= 60:
        bar = min(30, (free - 18) // 2)
        name = min(40, free - bar - 18)
        return _Columns(name=name, bar=bar, spark=free - name - bar - 2, power=power)
    if free >= 30:
        spark = 8
        name = min(24, (free - spark - 2) // 2)
        return _Columns(name=name, bar=free - spark - name - 2, spark=spark, power=power)
    name = max(8, free // 2)
    return _Columns(name=name, bar=max(6, free - name - 1), spark=0, power=power)


class GpuTable(Widget, can_focus=True):
    """The GPU rows; up/down move the selection, which the process list follows."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "GPU up", show=False),
        Binding("down,j", "move(1)", "GPU down", show=False),
    ]

    cursor: reactive[int] = reactive(0)

    class Selected(Message):
        """The selected GPU changed."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.snapshot: GpuSnapshot | None = None
        self.history: dict[int, deque[float]] = {}
        self.our_pids: frozenset[int] = frozenset()

    def show(self, snapshot: GpuSnapshot, our_pids: Collection[int] = ()) -> None:
        """Render a new sample; remember memory fractions for the sparklines."""
        self.snapshot = snapshot
        self.our_pids = frozenset(our_pids)
        for info, sample in zip(snapshot.infos, snapshot.samples, strict=False):
            used = _num(sample.memory_used)
            total = _num(info.memory_total)
            frac = 0.0 if used is None or not total else used / total
            self.history.setdefault(info.index, deque(maxlen=SPARK_POINTS)).append(frac)
        height = max(2, len(snapshot.infos) + 1 + len(self._groups())) if snapshot.infos else 2
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
        self.refresh()

    def action_move(self, delta: int) -> None:
        count = len(self.snapshot.infos) if self.snapshot else 0
        if count:
            self.cursor = (self.cursor + delta) % count

    def watch_cursor(self, value: int) -> None:
        self.post_message(self.Selected(value))
        self.refresh()

    def _groups(self) -> list[int]:
        """Indices of the GPUs that start a node's group (GPUs read from several nodes); [] for one host."""
        infos = self.snapshot.infos if self.snapshot is not None else ()
        if not any(i.host is not None for i in infos):
            return []
        return [k for k, info in enumerate(infos) if k == 0 or info.host != infos[k - 1].host]

    def on_click(self, event: events.Click) -> None:
        if not self.snapshot:
            return
        groups = set(self._groups())
        line = 1
        for k in range(len(self.snapshot.infos)):
            line += k in groups  # a node's name line comes first
            if event.y == line:
                self.cursor = k
                self.focus()
                return
            line += 1

    def _row(self, info: GpuInfo, sample: GpuSample, cols: _Columns, selected: bool) -> Content:
        total = _num(info.memory_total) or 0.0
        used = _num(sample.memory_used) or 0.0
        reserved = _num(sample.memory_reserved) or 0.0
        cap = info.capability
        cap_text = f"{cap[0]}.{cap[1]}" if isinstance(cap, tuple) else "–"  # an exporter's GPU: not published
        procs = _procs(sample)
        nprocs = len(procs)
        strangers = sum(1 for p in procs if p.pid not in self.our_pids)
        parts: list[Content | str | tuple[str, str]] = [
            (f"{info.index:>2} ", "bold"),
            fit(short_gpu_name("n/a" if is_na(info.name) else str(info.name)), cols.name) + " ",
            (f"{cap_text:>4} ", "$muted"),
        ]
        if sample.lost and info.host is not None:  # an exporter's GPU: its node stopped answering
            parts.append((f"{info.host}: exporter unreachable", "bold $gpu-lost"))
        elif sample.lost:
            parts.append(("GPU LOST (fell off the bus or driver reset)", "bold $gpu-lost"))
        else:
            high = bool(total) and (used + reserved) / total >= HIGH_MEMORY
            parts += [
                memory_bar(int(used), int(reserved), int(total), cols.bar, high=high),
                f" {gib(used):>5}/{gib(total):<5}",
            ]
            if cols.spark:
                parts += [(sparkline(self.history.get(info.index, ()), cols.spark), "$gpu-spark"), " "]
            parts += [
                f"{_show(sample.utilization_gpu, '{:.0f}%'):>4} ",
                f"{_show(sample.temperature_c, '{:.0f}°C'):>5} ",
            ]
            if cols.power:
                parts.append(f"{_show(sample.power_w, '{:.0f}W'):>5} ")
            procs_style = "$gpu-stranger" if strangers else ("$gpu-ours" if nprocs else "$muted")
            # an exporter publishes no process list: a dash, not "n/ap"
            parts.append((" –" if is_na(sample.processes) else f"{nprocs:>2}p", procs_style))
        row = Content.assemble(*parts)
        return row.stylize("reverse") if selected and self.has_focus else (row.stylize("bold") if selected else row)

    def _header(self, cols: _Columns) -> Content:
        text = " # " + fit("name", cols.name) + " cap  " + fit("memory", cols.bar) + fit(" used/total", 12)
        if cols.spark:
            text += fit("trend", cols.spark) + " "
        text += "util  temp "
        if cols.power:
            text += "power "
        text += "procs"
        return Content.styled(text, "$muted")

    def render(self) -> Content:
        snap = self.snapshot
        if snap is None:
            return Content.styled("reading GPUs…", "$muted")
        if not snap.infos:
            reason = snap.unavailable_reason or "no GPUs found"
            return Content.styled(f"GPUs: {reason}", "$warning")
        cols = _columns(self.size.width)
        lines = [self._header(cols)]
        groups = set(self._groups())
        for k, (info, sample) in enumerate(zip(snap.infos, snap.samples, strict=False)):
            if k in groups:  # GPU rows grouped by node
                lines.append(Content.styled(f"── {info.host or 'this host'} ", "bold $accent"))
            lines.append(self._row(info, sample, cols, info.index == self.cursor))
        return Content("\n").join(lines)


class ProcessList(Static):
    """Processes on the selected GPU: pid, command, memory; ours vs strangers."""

    def show(self, snapshot: GpuSnapshot | None, index: int, our_pids: Collection[int]) -> None:
        if snapshot is None or not (0 <= index < len(snapshot.samples)):
            set_content(self, Content.styled("no GPU selected", "$muted"))
            return
        sample = snapshot.samples[index]
        if is_na(sample.processes):
            set_content(self, Content.styled(f"GPU {index}: process list not available (n/a)", "$muted"))
            return
        if not _procs(sample):
            set_content(self, Content.styled(f"GPU {index}: no processes", "$muted"))
            return
        ours = frozenset(our_pids)
        width = max(30, self.size.width or 80)
        cmd_width = max(10, width - 30)
        lines: list[Content] = [Content.styled(f"GPU {index} processes   pid      memory  command", "$muted")]
        for proc in sorted(_procs(sample), key=lambda p: -(_num(p.used_memory) or 0)):
            mine = proc.pid in ours
            tag = ("ours    ", "$gpu-ours") if mine else ("stranger", "bold $gpu-stranger")
            mem = _num(proc.used_memory)
            command = _command(proc)
            lines.append(
                Content.assemble(
                    "  ", tag, f" {proc.pid:>8}  ", f"{'n/a' if mem is None else gib(mem) + 'G':>7}  ",
                    fit(command, cmd_width),
                )
            )
        set_content(self, Content("\n").join(lines))


class GpuPanel(Vertical):
    """The GPU table plus the process list of the selected GPU; it keeps the rounds for the plots."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "GPUs"
        self._snapshot: GpuSnapshot | None = None
        self._ours: frozenset[int] = frozenset()
        self.history = GpuHistory()
        """The last 10 minutes of rounds, for the plots (G)."""

    def compose(self) -> ComposeResult:
        yield GpuTable(id="gpu-table")
        yield ProcessList(id="gpu-procs")

    def show(self, snapshot: GpuSnapshot, our_pids: Collection[int] = ()) -> None:
        self._snapshot = snapshot
        self._ours = frozenset(our_pids)
        self.history.add(snapshot)
        table = self.query_one(GpuTable)
        table.show(snapshot, self._ours)
        self.query_one(ProcessList).show(snapshot, table.cursor, self._ours)
        slow = snapshot.cost_seconds >= SLOW_ROUND
        subtitle = f"NVML slow: last round took {snapshot.cost_seconds:.1f} s" if slow else ""
        if subtitle != self.border_subtitle:
            self.border_subtitle = subtitle

    @property
    def snapshot(self) -> GpuSnapshot | None:
        """The latest round shown."""
        return self._snapshot

    @property
    def our_pids(self) -> frozenset[int]:
        """Our launch's pids, as of the latest round."""
        return self._ours

    def show_stall(self, evidence: str | None) -> None:
        """While the bring-up is STALLED, the title carries what the GPUs say about it (the Board's words)."""
        title = f"GPUs · stalled: {evidence}" if evidence else "GPUs"
        if title != self.border_title:
            self.border_title = title

    def show_slow(self, text: str | None) -> None:
        """Name a sampling round that is taking long (the Board's words; the table keeps the last sample)."""
        if text:
            self.border_subtitle = text
        elif (self.border_subtitle or "").startswith("NVML slow: waiting"):
            self.border_subtitle = ""

    def on_gpu_table_selected(self, message: GpuTable.Selected) -> None:
        self.query_one(ProcessList).show(self._snapshot, message.index, self._ours)
