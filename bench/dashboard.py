"""Dashboard CPU benchmark: CPU-seconds to first paint, per engine batch, per GPU sample, per tick, to shut down.

Run: ``.venv/bin/python -m bench.dashboard`` (about a minute on an idle 2-core machine; ``--quick`` for
a smaller run). The dashboard (SymmApp, headless, 120x40) runs on a stand-in session without threads,
fed the real engine's output: the SGLang TP8 ready fixture judged line by line on a fixed clock (one
batch per line, each with its readiness snapshot, WAITING -> STARTING -> READY), GPU samples of the
8-GPU stand-in under a changing load, and once-a-second snapshots. Every step is painted
(``pilot.pause()``) before the next, as a dashboard under a slow bring-up does.

The baselines, in the same run (each in its own child process, the runs interleaved): a bare Textual
app with the same number of widgets that updates one Static per step, and the dashboard with its
redraw fixes undone (``undo_redraw_fixes``: how it redrew before them). CPU is ``time.process_time()`` of the child
(every thread), around each phase. No target: the figures are for docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sglang-tp8-ready.log"
SIZE = (120, 40)
GPU_SAMPLES = 100
TICKS = 100
RUNS = 3


# ---- the data (computed before any measurement) ---------------------------------------------------

def engine_batches() -> list[Any]:
    """One EngineBatch per fixture line, judged by the real rules and readiness machine on a fixed clock."""
    from symmtui.bringup.engine import EngineUpdate
    from symmtui.judge.board import board_of
    from symmtui.judge.events import EventBuilder
    from symmtui.judge.readiness import Readiness, ReadinessConfig
    from symmtui.judge.rules import RuleSet
    from symmtui.judge.verdict import NodeView, findings, ordered_events
    from symmtui.logs.decode import LogLine
    from symmtui.logs.follow import LogFollower
    from symmtui.session.messages import EngineBatch

    follower = LogFollower(FIXTURE)
    try:
        lines = [item for item in follower.poll() if isinstance(item, LogLine)]
    finally:
        follower.close()
    builder = EventBuilder(RuleSet())
    readiness = Readiness(ReadinessConfig(timeout=900.0, stall=300.0), 0.0)
    batches = []
    now = 0.0
    for k, line in enumerate(lines):
        now += 0.5
        events = list(builder.feed(line))
        if k == len(lines) - 1:
            events += builder.flush()
        for ev in events:
            readiness.feed(ev, now)
        readiness.feed_activity(now)
        snap = readiness.snapshot(now)
        verdict = board_of([NodeView("gpu-node-7", snap, None, findings(ordered_events(snap)))], seq=k + 1, now=now)
        batches.append(EngineBatch("gpu-node-7", EngineUpdate((line,), tuple(events), (), snap, 0, 0), str(FIXTURE),
                                   verdict))
    return batches


def tick_snapshots(batches: list[Any], count: int) -> list[Any]:
    """Once-a-second Boards of a bring-up in its weight loading (the engine's heartbeat): the same state, the
    clock moving."""
    from msgspec.structs import replace

    from symmtui.judge.readiness import State

    starting = [b for b in batches if b.snapshot.state is State.STARTING]
    base = starting[len(starting) // 2]
    view = base.board.about
    return [replace(base, update=replace(base.update, lines=(), events=()), board=replace(base.board, seq=10_000 + i,
            nodes=(replace(view, elapsed=view.elapsed + i, snapshot=replace(
                view.snapshot, elapsed=view.snapshot.elapsed + i,
                remaining_timeout=(view.snapshot.remaining_timeout or 900.0) - i)),)))
            for i in range(count)]


def gpu_samples(count: int) -> list[Any]:
    """GPU sampling rounds of the 8x RTX PRO 6000 stand-in, the model's memory and utilisation moving."""
    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
    from symmtui.gpu.standin import load_standin, standin_host
    from symmtui.session.messages import GpuRound

    clock = [1000.0]
    module = load_standin("rtx-pro-6000-x8-pcie", clock=lambda: clock[0])
    host = standin_host(module)
    nvml = Nvml(module, process_lookup=lambda pid: ("python3", ("python3", "-m", "sglang.launch_server")))
    sampler = GpuSampler(nvml)
    out = []
    for i in range(count):
        clock[0] += 1.0
        host.set_load(0.2 + 0.6 * (i % 20) / 20, 4242, name="python3")
        host.set_utilization(float(40 + (i * 7) % 60))
        snap = sampler.sample_once()
        snap = GpuSnapshot(clock[0], snap.infos, snap.samples, 0.0004, snap.unavailable_reason)
        out.append(GpuRound(snap, frozenset({4242}), 12))
    nvml.shutdown()
    return out


# ---- the children ---------------------------------------------------------------------------------

def _phases(app: Any, steps: dict[str, Callable[[int], None]], counts: dict[str, int],
            first: Callable[[], bool]) -> dict[str, float]:
    """Run ``app`` headless: CPU to first paint (``first()`` holds), then each step ``counts[name]`` times
    (each painted), then CPU to shut down."""
    out: dict[str, float] = {}

    async def run() -> None:
        c0 = time.process_time()
        ctx = app.run_test(size=SIZE)
        pilot = await ctx.__aenter__()
        try:
            while not first():
                await pilot.pause()
            await pilot.pause()
            out["first_paint"] = time.process_time() - c0
            for name, step in steps.items():
                c = time.process_time()
                for i in range(counts[name]):
                    step(i)
                    await pilot.pause()
                out[name] = time.process_time() - c
        finally:
            c = time.process_time()
            await ctx.__aexit__(None, None, None)
            out["shutdown"] = time.process_time() - c

    asyncio.run(run())
    return out


def undo_redraw_fixes() -> None:
    """Put back how the dashboard redrew before its redraw fixes (2026-12-01), for a same-run comparison:
    a screen layout for each change of the log lines' virtual size and for each update of a hidden
    multi-line Static. (Two fixes of that day are gone since: the footer that recomposed only when its
    keys changed, and the log lines' override of ScrollView._size_updated, both Textual private API.)"""
    from textual.content import Content
    from textual.widgets import Static

    from symmtui.ui.widgets import gauge, gpu_panel
    from symmtui.ui.widgets.log_view import LogLines

    def set_virtual_size(self: LogLines, size: Any) -> None:
        self.virtual_size = size

    def set_content(widget: Static, content: Content) -> None:  # the one-line rule only
        old: Content | None = getattr(widget, "_symmtui_content", None)
        if old is not None and old.plain == content.plain and old.spans == content.spans:
            return
        width = widget.size.width
        one_line = (old is not None and width > 0 and "\n" not in old.plain and "\n" not in content.plain
                    and old.cell_length <= width and content.cell_length <= width)
        widget._symmtui_content = content  # type: ignore[attr-defined]
        widget.update(content, layout=not one_line)

    LogLines.set_virtual_size = set_virtual_size  # type: ignore[method-assign]
    gauge.set_content = gpu_panel.set_content = set_content


def child_dashboard(quick: bool, *, undone: bool = False) -> dict[str, Any]:
    if undone:
        undo_redraw_fixes()
    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.standin import load_standin
    from symmtui.gpu.topology import read_topology
    from symmtui.session.messages import EngineBatch, TopologyRead
    from symmtui.ui.app import SymmApp
    from tests.ui.kit import FixedSession, read_lines, replay

    batches = engine_batches()
    samples = gpu_samples(GPU_SAMPLES // (4 if quick else 1))
    ticks = tick_snapshots(batches, TICKS // (4 if quick else 1))
    shown = [0]
    lines = read_lines(FIXTURE, upto=1)
    events, snap = replay(lines)
    session = FixedSession(lines, events, snap, samples[0].snapshot, None, log_path=FIXTURE)
    box = session.mailbox
    take = box.take

    def counted() -> list[Any]:  # the batches the app took: each step's one, taken before the next
        got = take()
        shown[0] += sum(1 for m in got if isinstance(m, EngineBatch))
        return got

    box.take = counted  # type: ignore[method-assign]
    nvml = Nvml(load_standin("rtx-pro-6000-x8-pcie"))
    box.put(TopologyRead(read_topology(nvml), None))
    nvml.shutdown()
    app = SymmApp(session)

    def batch(i: int) -> None:
        box.put(batches[1 + i])

    def sample(i: int) -> None:
        box.put(samples[i % len(samples)])

    def tick(i: int) -> None:
        box.put(ticks[i])

    counts = {"batches": len(batches) - 1, "gpu": len(samples), "ticks": len(ticks)}
    result: dict[str, Any] = _phases(app, {"batches": batch, "gpu": sample, "ticks": tick}, counts,
                                     lambda: shown[0] >= 1)
    assert shown[0] == len(batches) + len(ticks), f"{shown[0]} batches shown of {len(batches) + len(ticks)}"
    result["counts"] = counts
    return result


def child_bare(quick: bool) -> dict[str, Any]:
    """A bare Textual app with as many widgets as the dashboard; each step updates one Static."""
    from textual.app import App, ComposeResult
    from textual.containers import Vertical
    from textual.widgets import Footer, Static

    widgets = int(sys.argv[-1])
    n_gpu = GPU_SAMPLES // (4 if quick else 1)
    n_tick = TICKS // (4 if quick else 1)
    n_batch = len(FIXTURE.read_text().splitlines()) - 1

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            with Vertical():
                for i in range(widgets - 4):  # the screen, Vertical, Footer (its keys come on top) counted
                    yield Static(f"widget {i}", id=f"w{i}")
            yield Footer()

    app = Bare()

    def step(i: int) -> None:
        app.query_one("#w0", Static).update(f"step {i}")

    counts = {"batches": n_batch, "gpu": n_gpu, "ticks": n_tick}
    result: dict[str, Any] = _phases(app, {"batches": step, "gpu": step, "ticks": step}, counts,
                                     lambda: True)
    result["counts"] = counts
    return result


def child_count() -> dict[str, Any]:
    """How many widgets the dashboard's screen has once painted (for the bare app)."""
    from symmtui.ui.app import SymmApp
    from tests.ui.kit import starting_session

    app = SymmApp(starting_session())
    out: dict[str, Any] = {}

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            out["widgets"] = len(list(app.screen.walk_children(with_self=True)))

    asyncio.run(run())
    return out


def _child(mode: str, *args: str) -> dict[str, Any]:
    from bench.ui import child_json

    return child_json("bench.dashboard", mode, *args)


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        mode, quick = sys.argv[2], "--quick" in sys.argv
        if mode == "count":
            print(json.dumps(child_count()))
        else:
            print(json.dumps(child_bare(quick) if mode == "bare" else child_dashboard(quick, undone=mode == "undone")))
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the GPU samples and ticks, one run")
    parser.add_argument("--runs", type=int, default=RUNS, help="runs of each app (median shown)")
    args = parser.parse_args()
    quick = args.quick
    runs = 1 if quick else args.runs
    flag = ["--quick"] if quick else []
    widgets = _child("count")["widgets"]
    dash: list[dict[str, Any]] = []
    undone: list[dict[str, Any]] = []
    bare: list[dict[str, Any]] = []
    for _ in range(runs):  # interleaved, so a change of the machine's load hits all alike
        dash.append(_child("dashboard", *flag))
        undone.append(_child("undone", *flag))
        bare.append(_child("bare", *flag, str(widgets)))
    counts = dash[0]["counts"]
    rows = [
        ("start -> first paint (first batch, GPU sample, topology shown)", "first_paint", 1),
        (f"engine batches: {counts['batches']} (one fixture line each, with its snapshot), per batch",
         "batches", counts["batches"]),
        (f"GPU samples: {counts['gpu']} (8 GPUs, load moving), per sample", "gpu", counts["gpu"]),
        (f"ticks: {counts['ticks']} (snapshot, clock moving), per tick", "ticks", counts["ticks"]),
        ("shutdown (run_test exit)", "shutdown", 1),
    ]
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{widgets} widgets on the dashboard's screen; median of {runs} run(s), CPU-seconds of the process")
    width = max(len(r[0]) for r in rows)
    print(f"{'phase (CPU per step)':<{width}}  {'bare app':>11}  {'fixes undone':>12}  {'dashboard':>11}  {'saved':>6}")
    phases = ("first_paint", "batches", "gpu", "ticks", "shutdown")
    for name, key, n in rows:
        b, u, d = (statistics.median(r[key] for r in runs_of) for runs_of in (bare, undone, dash))
        unit = 1000.0 / n
        print(f"{name:<{width}}  {b * unit:>8.2f} ms  {u * unit:>9.2f} ms  {d * unit:>8.2f} ms  "
              f"{100 * (u - d) / u:>5.0f}%")
    b, u, d = (statistics.median(sum(r[k] for k in phases) for r in runs_of) for runs_of in (bare, undone, dash))
    print(f"{'all phases, CPU-seconds':<{width}}  {b:>9.2f} s  {u:>10.2f} s  {d:>9.2f} s  {100 * (u - d) / u:>5.0f}%")
    print("bare app: a Textual app with as many widgets (Statics and a Footer), one Static updated per step; "
          "fixes undone: the dashboard with its redraw fixes of 2026-12-01 put back as they were (undo_redraw_fixes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
