"""`symmtui gpus --source URL ...`: the GPUs of one or more exporters, as the table or the JSON of `gpus`."""

from __future__ import annotations

import argparse
import json
import queue
import sys
from typing import Any

from rich.console import Group

from symmtui.errors import UserError
from symmtui.gpu import render
from symmtui.gpu.exporter import ExporterError, ExporterSource
from symmtui.gpu.multi import MultiSource
from symmtui.gpu.report import report_json
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.source import GpuSource, NvmlSource
from symmtui.gpu.specs import open_source


def _sources(args: argparse.Namespace) -> list[GpuSource]:
    if args.standin or args.topo:
        flag = "--standin" if args.standin else "--topo"
        raise UserError(f"{flag} needs local NVML and --source reads exporters: use one or the other "
                        f"(add --source nvml to show this machine's GPUs beside the exporters')")
    specs = list(dict.fromkeys(args.source))  # the same URL twice is read once
    return [open_source(spec, timeout=args.source_timeout) for spec in specs]


def _exporters(sources: list[GpuSource]) -> list[ExporterSource]:
    return [s for s in sources if isinstance(s, ExporterSource)]


def describe(sources: list[GpuSource]) -> list[dict[str, Any]]:
    """What each source is (the JSON's ``sources``): URL, exporter kind, driver, hosts seen."""
    out: list[dict[str, Any]] = []
    for s in sources:
        if isinstance(s, ExporterSource):
            out.append({"url": s.url, "kind": s.kind, "driver_version": s.driver,
                        "hosts": list(s.hosts), "error": str(s.last_error) if s.last_error else None})
        else:
            out.append({"url": s.label, "kind": "nvml", "driver_version": None, "hosts": [], "error": None})
    return out


def header(snap: GpuSnapshot, sources: list[GpuSource]) -> str:
    """`GPUs 3 from 2 sources: http://a:9400/metrics (dcgm-exporter, driver 595.58.03), ...`"""
    parts = []
    for s in sources:
        if isinstance(s, ExporterSource):
            facts = [s.kind or "unread"] + ([f"driver {s.driver}"] if s.driver else [])
            parts.append(f"{s.url} ({', '.join(facts)})")
        else:
            parts.append("NVML (this machine)")
    noun = "source" if len(sources) == 1 else "sources"
    return f"GPUs {len(snap.infos)} from {len(sources)} {noun}: " + ", ".join(parts)


def sources_main(args: argparse.Namespace) -> int:
    """Read every source once (or until Ctrl-C with --watch) and print; a source that fails is one error line."""
    sources = _sources(args)
    combined = sources[0] if len(sources) == 1 else _multi(sources)
    sampler = GpuSampler(combined, interval=args.interval)
    try:
        snap = sampler.sample_once()
        for s in _exporters(sources):
            if s.last_error is not None:  # one shot: an exporter that cannot be read is an error, not a blank row
                raise s.last_error
        nvml_reason = next((snap.unavailable_reason for s in sources if isinstance(s, NvmlSource)), None)
        if nvml_reason is not None:
            raise UserError(f"--source nvml: {nvml_reason}", exit_code=3)
        if args.json and args.watch:
            return _watch_json(sampler, sources, max_frames=getattr(args, "max_frames", None))
        if args.json:
            doc = report_json(snap, None, driver=_driver(sources), cuda=None, standin=None, sources=describe(sources))
            json.dump(doc, sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        from rich.console import Console  # rich: only the human-readable table


        console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
        if args.watch:
            return _watch(console, sampler, sources, max_frames=getattr(args, "max_frames", None))
        console.print(header(snap, sources), markup=False)
        console.print(render.gpu_table(snap))
        console.print(render.process_table(snap))
        if args.debug:
            console.print(f"one round of {len(sources)} source(s): {snap.cost_seconds * 1000:.2f} ms, "
                          f"slowest {snap.slowest_call} {snap.slowest_call_seconds * 1000:.2f} ms", markup=False)
        return 0
    finally:
        sampler.stop()
        combined.close()


def _multi(sources: list[GpuSource]) -> GpuSource:
    return MultiSource(sources)


def _driver(sources: list[GpuSource]) -> str | None:
    drivers = {s.driver for s in _exporters(sources) if s.driver}
    return drivers.pop() if len(drivers) == 1 else None


def _watch_json(sampler: GpuSampler, sources: list[GpuSource], *, max_frames: int | None) -> int:

    snaps: queue.Queue[GpuSnapshot] = queue.Queue(maxsize=64)

    def put(snap: GpuSnapshot) -> None:
        if not snaps.full():
            snaps.put(snap)

    sampler.on_sample = put
    frames = 0
    sampler.start()
    try:
        while max_frames is None or frames < max_frames:
            snap = snaps.get()
            doc = report_json(snap, None, driver=_driver(sources), cuda=None, standin=None, sources=describe(sources))
            sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
            sys.stdout.flush()
            frames += 1
    except (KeyboardInterrupt, BrokenPipeError):
        return 0
    return 0


def _watch(console: Any, sampler: GpuSampler, sources: list[GpuSource], *, max_frames: int | None) -> int:

    def view(snap: GpuSnapshot) -> Group:
        title = f"{header(snap, sources)}  every {sampler.interval:g}s"
        errors = [f"{s.url}: {s.last_error}" for s in _exporters(sources) if s.last_error is not None]
        return Group(render.gpu_table(snap, title=title), *errors)

    return render.live_redraw(console, sampler, view, max_frames)


__all__ = ["ExporterError", "describe", "header", "sources_main"]
