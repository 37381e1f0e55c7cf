"""The body of `symmtui gpus` (kept out of the verb module so the verb stays thin)."""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
from typing import Any

from rich.console import Console, Group

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.gpu import render
from symmtui.gpu.nvml import STANDIN_ENV, Nvml, nvml_from_env
from symmtui.gpu.options import EXIT_UNAVAILABLE
from symmtui.gpu.report import report_json
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.topology import Topology, read_topology

DEBUG_ROUNDS = 50


def _debug(nvml: Nvml, sampler: GpuSampler, snap: GpuSnapshot, topo: Topology | None) -> tuple[list[float], dict[str, Any]]:
    costs = [sampler.sample_once().cost_seconds for _ in range(DEBUG_ROUNDS)]
    ordered = sorted(costs)
    data = {
        "pynvml_import_seconds": round(nvml.import_seconds, 6),
        "nvml_init_seconds": round(nvml.init_seconds, 6),
        "first_sample_seconds": round(snap.cost_seconds, 6),
        "sample_median_seconds": round(ordered[len(ordered) // 2], 6),
        "sample_max_seconds": round(ordered[-1], 6),
        "sample_rounds": len(ordered),
        "nvml_calls_per_sample": snap.calls,
        "slowest_call": snap.slowest_call,
        "slowest_call_seconds": round(snap.slowest_call_seconds, 6),
        "topology_seconds": None if topo is None else round(topo.cost_seconds, 6),
    }
    return costs, data


def gpus_main(args: argparse.Namespace) -> int:
    """Run `symmtui gpus` with parsed arguments; returns the exit code."""
    try:
        return _gpus(args)
    except BrokenPipeError:  # `symmtui gpus --json | head`: the reader left, nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        os.close(devnull)
        return 0


def _gpus(args: argparse.Namespace) -> int:
    if args.watch and not args.json:  # a table redrawn in place: into a pipe it would never end usefully
        boundary.require_terminal("gpus --watch", streams=("standard output",),
                                  hint="run it in a terminal, or use --watch --json in a pipe (one JSON line per sample)")
    if getattr(args, "source", None):
        from symmtui.gpu.remote import sources_main  # the exporters' client (httpx, ~50 ms): only --source

        return sources_main(args)
    standin = args.standin or os.environ.get(STANDIN_ENV) or None
    try:
        nvml = nvml_from_env(args.standin)
    except KeyError as exc:  # an unknown scenario name: the message lists the known ones
        raise UserError(str(exc.args[0]) if exc.args else str(exc), exit_code=2) from None
    except OSError as exc:
        raise UserError(f"--standin: cannot read {args.standin} ({exc.strerror})", exit_code=2) from None
    except ValueError as exc:  # not JSON, or not a recording
        raise UserError(f"--standin: {exc}", exit_code=2) from None
    sampler = GpuSampler(nvml, interval=args.interval)
    nvml.available()  # pay import + nvmlInit here, so the sample cost below is the sample's own
    snap = sampler.sample_once()
    want_topo = not args.no_topo and snap.unavailable_reason is None
    topo = read_topology(nvml) if want_topo else None
    if args.json and args.watch and snap.unavailable_reason is None:
        return _watch_json(nvml, sampler, topo, standin, max_frames=getattr(args, "max_frames", None))
    if args.json:
        debug = _debug(nvml, sampler, snap, topo)[1] if args.debug and snap.unavailable_reason is None else None
        doc = report_json(snap, topo, driver=_s(nvml.driver_version()), cuda=_s(nvml.cuda_driver_version()),
                          standin=standin, debug=debug)
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_UNAVAILABLE if snap.unavailable_reason else 0

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    if snap.unavailable_reason is not None:
        console.print(snap.unavailable_reason, markup=False)
        return EXIT_UNAVAILABLE
    if args.watch:
        return _watch(console, nvml, sampler, standin, max_frames=getattr(args, "max_frames", None))

    if not args.topo:
        console.print(_header(nvml, standin), markup=False)
        console.print(render.gpu_table(snap))
        console.print(render.process_table(snap))
    if topo is not None:
        console.print(render.topology_block(topo, p2p=args.topo))
    if args.debug:
        costs, _ = _debug(nvml, sampler, snap, topo)
        for line in render.debug_lines(snap, nvml.import_seconds, nvml.init_seconds, topo, costs):
            console.print(line, markup=False)
    return 0


def _watch_json(
    nvml: Nvml, sampler: GpuSampler, topo: Topology | None, standin: str | None, *, max_frames: int | None
) -> int:
    """JSON Lines: one compact document per sample (the topology only in the first) until Ctrl-C."""
    snaps: queue.Queue[GpuSnapshot] = queue.Queue(maxsize=64)

    def put(snap: GpuSnapshot) -> None:
        if not snaps.full():  # a stalled reader (a paused pipe) must not grow memory
            snaps.put(snap)

    sampler.on_sample = put
    driver, cuda = _s(nvml.driver_version()), _s(nvml.cuda_driver_version())
    frames = 0
    sampler.start()
    try:
        while max_frames is None or frames < max_frames:
            snap = snaps.get()
            doc = report_json(snap, topo if frames == 0 else None, driver=driver, cuda=cuda, standin=standin)
            sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
            sys.stdout.flush()
            frames += 1
    except (KeyboardInterrupt, BrokenPipeError):
        return 0
    finally:
        sampler.stop()
    return 0


def _s(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _header(nvml: Nvml, standin: str | None) -> str:
    head = f"Driver {nvml.driver_version()}  CUDA {nvml.cuda_driver_version()}  GPUs {nvml.device_count()}"
    families = sorted({f"{i.sm} {i.family}" for i in nvml.infos() if isinstance(i.family, str)})
    if families:
        head += f"  ({', '.join(families)})"
    if standin:
        head += f"  [stand-in: {standin}]"
    return head


def _watch(
    console: Any,
    nvml: Nvml,
    sampler: GpuSampler,
    standin: str | None,
    *,
    max_frames: int | None = None,
) -> int:
    """Redraw the tables on every new snapshot until Ctrl-C (or ``max_frames`` frames, for tests)."""

    def view(snap: GpuSnapshot) -> Group:
        slow = sampler.busy_for()
        title = f"{_header(nvml, standin)}  every {sampler.interval:g}s  sample {snap.cost_seconds * 1000:.2f} ms"
        if slow > max(1.0, 2 * sampler.interval):
            title += f"  NVML slow: sample in flight for {slow:.1f} s"
        if snap.unavailable_reason:
            return Group(title, snap.unavailable_reason)
        return Group(render.gpu_table(snap, title=title), render.process_table(snap))

    return render.live_redraw(console, sampler, view, max_frames)
