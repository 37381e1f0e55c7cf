"""Rich renderables for `symmtui gpus`: the GPU table, the process table, the topology block, debug costs."""

from __future__ import annotations

import threading
from collections.abc import Callable

from rich import box
from rich.console import Console, Group, JustifyMethod, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from symmtui.gpu.results import NAType, to_mib
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.topology import P2P_FLAGS, Topology
from symmtui.textsafe import visible


def _na(value: object, fmt: str = "{}") -> str:
    return "n/a" if isinstance(value, NAType) or value is None else visible(fmt.format(value))


def _text(value: str) -> Text:
    """Outside text (a GPU name, a host, a bus id from an exporter) as a cell: controls visible, and never
    read as Rich markup (a ``[link=...]`` in a label would write a hyperlink escape)."""
    return Text(visible(value))


def _mib(value: object) -> str:
    return "n/a" if not isinstance(value, int) else f"{to_mib(value)}MiB"


def short_name(name: object) -> str:
    """A GPU name without the vendor prefix and edition words, to fit a table column."""
    if not isinstance(name, str):
        return "n/a"
    text = name.removeprefix("NVIDIA ")
    for long, short in ((" Server Edition", " SE"), (" Workstation Edition", " WE"), (" Max-Q", " MQ")):
        text = text.replace(long, short)
    return visible(text)


def gpu_table(snap: GpuSnapshot, title: str | None = None) -> Table:
    """One row per GPU, memory as nvidia-smi shows it (used excludes the driver's reservation)."""
    table = Table(title=title, title_justify="left", expand=False, pad_edge=False, box=box.SIMPLE_HEAD)
    hosts = any(info.host is not None for info in snap.infos)  # GPUs from exporters: grouped by host
    xid = any(not isinstance(s.last_xid, NAType) for s in snap.samples)
    if hosts:
        table.add_column("Host", justify="left", no_wrap=True)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("GPU", "right"),
        ("Name", "left"),
        ("Cap", "left"),
        ("Bus-Id", "left"),
        ("Used / Total MiB", "right"),
        ("Rsvd", "right"),
        ("Util", "right"),
        ("Temp", "right"),
        ("Power", "right"),
        ("PCIe now/max", "left"),
        ("MIG", "left"),
    )
    for col, just in columns:
        table.add_column(col, justify=just, no_wrap=True)
    if xid:
        table.add_column("Xid", justify="right", no_wrap=True)
    samples = {s.index: s for s in snap.samples}
    last_host: str | None = None
    for info in snap.infos:
        s = samples.get(info.index)
        cap = info.capability
        cap_text = "n/a" if isinstance(cap, NAType) else f"{cap[0]}.{cap[1]}"
        lead: list[str | Text] = []
        if hosts:
            host = info.host if info.host is not None else "(this machine)"
            lead.append(_text(host) if host != last_host else "")
            last_host = host
        number = str(info.host_index if info.host is not None and info.host_index is not None else info.index)
        if info.lost or s is None or s.lost:
            why = dict((s.errors if s is not None else ()) + info.errors).get("source")
            lost = Text("unreachable" if why else "GPU is lost", "bold red")
            table.add_row(*lead, number, _text(short_name(info.name)), cap_text, _text(_na(info.pci_bus_id)),
                          lost, "", "", "", "", "", "", *([""] if xid else []))
            continue
        power = f"{_na(s.power_w, '{:.0f}')}/{_na(info.power_limit_w, '{:.0f}')}W"
        pcie = f"g{_na(s.pcie_gen)}x{_na(s.pcie_width)}/g{_na(info.pcie_max_gen)}x{_na(info.pcie_max_width)}"
        if info.host is not None:  # an exporter's row: no PCIe link, and often no power limit
            power = _na(s.power_w, "{:.0f}W") if isinstance(info.power_limit_w, NAType) else power
            pcie = "n/a"
        table.add_row(
            *lead,
            number,
            _text(short_name(info.name)),
            cap_text,
            _text(_na(info.pci_bus_id)),
            f"{_n(s.memory_used)} / {_n(s.memory_total)}",
            _n(s.memory_reserved),
            _na(s.utilization_gpu, "{}%"),
            _na(s.temperature_c, "{}C"),
            power,
            pcie,
            _na(info.mig_mode, "{:.3}"),
            *([_na(s.last_xid)] if xid else []),
        )
    return table


def _n(value: object) -> str:
    return "n/a" if not isinstance(value, int) else str(to_mib(value))


def process_table(snap: GpuSnapshot, width: int = 60) -> Table | Text:
    """Processes holding GPU memory (pid, type, name, memory, command line)."""
    if snap.samples and all(i.host is not None for i in snap.infos) and all(
            isinstance(s.processes, NAType) for s in snap.samples):
        return Text("Processes: n/a (exporters do not publish them; run symmtui gpus on the node)")
    rows = []
    for s in snap.samples:
        if isinstance(s.processes, NAType):
            rows.append((str(s.index), "n/a", "", "process list not available", "", ""))
            continue
        for p in s.processes:
            # Another process's name and command line are anybody's text: shown, never obeyed.
            cmd = "n/a" if isinstance(p.cmdline, NAType) else visible(" ".join(p.cmdline))
            if len(cmd) > width:
                cmd = cmd[: width - 1] + "…"
            rows.append((str(s.index), str(p.pid), p.kind, _na(p.name), _mib(p.used_memory), cmd))
    if not rows:
        return Text("No processes hold GPU memory.")
    table = Table(title="Processes", title_justify="left", pad_edge=False, box=box.SIMPLE_HEAD)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("GPU", "right"), ("PID", "right"), ("Type", "left"), ("Process name", "left"),
        ("GPU memory", "right"), ("Command line", "left"),
    )
    for col, just in columns:
        table.add_column(col, justify=just, overflow="fold" if col == "Command line" else "ellipsis")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # anybody's text: never Rich markup
    return table


def nvlink_lines(topo: Topology) -> list[str]:
    """One line per GPU: active links, version, what they reach."""
    out = []
    for i, links in enumerate(topo.nvlinks):
        active = [lk for lk in links if lk.active]
        if not links:
            out.append(f"GPU{i}: no NVLink")
            continue
        versions = sorted({lk.version for lk in active if isinstance(lk.version, int)})
        remotes = sorted({lk.remote_type for lk in active})
        out.append(
            f"GPU{i}: {len(active)}/{len(links)} NVLinks active"
            + (f", version {'/'.join(map(str, versions))}" if versions else "")
            + (f", remote: {', '.join('NVSwitch' if r == 'switch' else r for r in remotes)}" if remotes else "")
        )
    return out


def topology_block(topo: Topology, *, p2p: bool = False) -> RenderableType:
    """The `nvidia-smi topo -m` matrix and legend, then the facts (and P2P matrices when asked)."""
    parts: list[RenderableType] = [Text("Topology (nvidia-smi topo -m notation)", style="bold"), Text(topo.render().expandtabs(8), no_wrap=True)]
    if p2p:
        for kind, flag in P2P_FLAGS.items():
            if kind in topo.p2p:
                parts.append(Text(f"P2P {kind} (nvidia-smi topo -p2p {flag})", style="bold"))
                parts.append(Text(topo.render_p2p(kind).split("\nLegend:")[0].expandtabs(8)))
        parts.append(Text("P2P legend: OK ok, CNS chipset not supported, GNS GPU not supported, "
                          "TNS topology not supported, NS not supported, U unknown"))
    parts.append(Text("NVLink", style="bold"))
    parts.extend(Text("  " + line) for line in nvlink_lines(topo))
    parts.append(Text("Facts", style="bold"))
    parts.extend(Text("  - " + fact) for fact in topo.facts)
    return Group(*parts)


def debug_lines(
    snap: GpuSnapshot, import_s: float, init_s: float, topo: Topology | None, repeat_costs: list[float]
) -> list[str]:
    """What sampling costs: import, init, the first (cold) round, warm rounds, the slowest call, topology."""
    lines = [
        f"import pynvml: {import_s * 1000:.2f} ms, nvmlInit: {init_s * 1000:.2f} ms",
        f"first sample of {len(snap.samples)} GPUs (cold: static info + first calls): {snap.cost_seconds * 1000:.3f} ms, "
        f"{snap.calls} NVML calls, slowest {snap.slowest_call or '-'} {snap.slowest_call_seconds * 1000:.3f} ms",
    ]
    if repeat_costs:
        ordered = sorted(repeat_costs)
        lines.append(
            f"one sample of {len(snap.samples)} GPUs, {len(ordered)} warm rounds: "
            f"median {ordered[len(ordered) // 2] * 1000:.3f} ms, "
            f"max {ordered[-1] * 1000:.3f} ms"
        )
    if topo is not None:
        lines.append(f"topology (read once): {topo.cost_seconds * 1000:.2f} ms")
    for s in snap.samples:
        for field, reason in s.errors:
            lines.append(f"GPU{s.index} {field}: n/a ({visible(reason)})")
    for info in snap.infos:
        for field, reason in info.errors:
            lines.append(f"GPU{info.index} {field}: n/a ({visible(reason)})")
    return lines


def live_redraw(console: Console, sampler: GpuSampler, view: Callable[[GpuSnapshot], RenderableType],
                max_frames: int | None) -> int:
    """`gpus --watch`: redraw ``view(snapshot)`` on every new sample until Ctrl-C (or ``max_frames``
    frames, for tests), then stop the sampler; exit code 0."""

    changed = threading.Event()
    sampler.on_sample = lambda _snap: changed.set()
    frames = 0
    sampler.start()
    try:
        with Live(console=console, auto_refresh=False) as live:
            while max_frames is None or frames < max_frames:
                changed.wait(max(0.25, sampler.interval * 2))
                changed.clear()
                snap = sampler.latest()
                if snap is not None:
                    live.update(view(snap), refresh=True)
                    frames += 1
    except KeyboardInterrupt:
        return 0
    finally:
        sampler.stop()
    return 0
