"""Log pane benchmark: LogView against Textual's Log (and RichLog, smaller counts) in the same run.

`.venv/bin/python -m bench.logview [--quick] [--big-mb N]` prints a table and exits 1 when LogView
misses a target: key press handled within 200 ms during a 50k lines/s burst, the last line on screen
within 1 s after it, bounded memory (1M lines under 40 MB), and a 1 GB log ingested with bounded
memory and old lines painted from the file within 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Log, RichLog

from symmtui.core.decode import LogLine
from symmtui.core.events import MAX_SPANS, Event
from symmtui.core.follow import LogFollower
from symmtui.core.rules import Kind
from symmtui.ui.widgets.log_view import LogView

SIZE = (120, 40)
BATCH = 2_000
TRACEBACK = [
    "[2026-11-29 09:40:17 TP{r}] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2714, in run',
    '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/distributed/device_communicators/'
    'torch_symm_mem.py", line 83, in __init__',
    "    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]",
    "KeyError: 12",
]


def text_for(no: int) -> str:
    return (f"[2026-11-29 09:{no // 60000 % 60:02d}:{no // 1000 % 60:02d} TP{no % 8}] "
            f"Decode batch. #running-req: {no % 97}, #token: {no * 7 % 100003}, line {no}")


def make_lines(start: int, n: int, offset: int = 0) -> tuple[list[LogLine], int]:
    """`n` SGLang-shaped lines from number `start` (a traceback every 25,000 lines); returns next offset."""
    out: list[LogLine] = []
    no = start
    for _ in range(n):
        k = no % 25_000 - 100
        if k == 0:
            text = TRACEBACK[0].format(r=no % 8)
        elif 0 < k < len(TRACEBACK):
            text = TRACEBACK[k]
        else:
            text = text_for(no)
        out.append(LogLine(no, offset, text, text))
        offset += len(text) + 1
        no += 1
    return out, offset


class TracebackEvents:
    """The events the engine posts for make_lines's tracebacks (the pane marks rows from events only): one
    event, re-emitted at each copy's exception line with every copy's span (the engine keeps 64)."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []

    def feed(self, lines: list[LogLine]) -> list[Event]:
        out = []
        for line in lines:
            if line.no % 25_000 == 100 + len(TRACEBACK) - 1:
                self.spans.append((line.no - len(TRACEBACK) + 1, line.no))
                out.append(Event(Kind.CRASH, "traceback", "KeyError: 12 at torch_symm_mem.py:83", self.spans[0][0],
                                 TRACEBACK[0], key="traceback:KeyError: 12", count=len(self.spans),
                                 spans=tuple(self.spans[:MAX_SPANS])))
        return out


class Batch(Message):
    def __init__(self, lines: list[LogLine], last: bool) -> None:
        super().__init__()
        self.lines = lines
        self.last = last


class BenchApp(App[None]):
    """Mounts one log widget; appends posted batches; an app key measures input latency."""

    BINDINGS = [Binding("f9", "probe", "probe")]  # a key the pane does not bind

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.animation_level = "none"
        self.kind = kind
        self.key_times: list[float] = []
        self.last_done: float | None = None
        self.painted: float | None = None
        self.last_text = ""
        self.appended = 0
        self.events = TracebackEvents()

    def compose(self) -> ComposeResult:
        if self.kind == "LogView":
            yield LogView(id="w")
        elif self.kind == "Log":
            yield Log(id="w")
        else:
            yield RichLog(id="w")

    def on_mount(self) -> None:
        self.query_one("#w").focus()

    def action_probe(self) -> None:
        self.key_times.append(time.perf_counter())

    def append(self, lines: list[LogLine]) -> None:
        w = self.query_one("#w")
        if isinstance(w, LogView):
            w.append_lines(lines)
            w.add_events(self.events.feed(lines))
        elif isinstance(w, Log):
            w.write_lines([line.plain for line in lines])
        else:
            assert isinstance(w, RichLog)
            for line in lines:
                w.write(line.plain)
        self.appended += len(lines)

    def on_batch(self, message: Batch) -> None:
        self.append(message.lines)
        if message.last:
            self.last_text = message.lines[-1].plain
            self.last_done = time.perf_counter()
            self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        """After the refresh that followed the last batch: is the last line on screen?"""
        if self.last_text and self.last_text in "\n".join(self.screen_text()):
            self.painted = time.perf_counter()
        else:
            self.call_after_refresh(self._painted)

    def screen_text(self) -> list[str]:
        w = self.query_one("#w")
        assert isinstance(w, Widget)
        lines = w.lines if isinstance(w, LogView) else w
        return [lines.render_line(y).text.rstrip() for y in range(lines.size.height)]


def widget_memory(kind: str, n: int) -> dict[str, float]:
    """µs per line appended and bytes retained for `n` lines in batches of BATCH."""

    async def run(trace: bool) -> tuple[float, float]:
        app = BenchApp(kind)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            gc.collect()
            if trace:
                tracemalloc.start()
                before = tracemalloc.get_traced_memory()[0]
            spent = 0.0
            no = 1
            while no <= n:
                lines, _ = make_lines(no, min(BATCH, n - no + 1), 0)
                t0 = time.perf_counter()
                app.append(lines)
                spent += time.perf_counter() - t0
                no += len(lines)
                del lines
            await pilot.pause()
            retained = 0.0
            if trace:
                gc.collect()
                retained = tracemalloc.get_traced_memory()[0] - before
                tracemalloc.stop()
            return spent / n * 1e6, retained

    per_line, _ = asyncio.run(run(False))
    _, mem = asyncio.run(run(True))
    return {"per_line": per_line, "memory": mem}


def burst(kind: str, rate: int, seconds: float, hz: int = 20) -> dict[str, float]:
    """Lines posted from a thread at `rate`/s (in `hz` batches a second) while keys are pressed."""

    freeze = kind.endswith("+freeze")
    kind = kind.removesuffix("+freeze")

    async def run() -> dict[str, float]:
        app = BenchApp(kind)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            if freeze:  # what an app can do after start-up: long-lived objects leave the GC's scans
                gc.collect()
                gc.freeze()
            per_batch = rate // hz
            ticks = int(seconds * hz)
            done = threading.Event()
            posted_last: list[float] = []

            def produce() -> None:
                start = time.perf_counter()
                no, offset = 1, 0
                for tick in range(ticks):
                    lines, offset = make_lines(no, per_batch, offset)
                    no += per_batch
                    if tick == ticks - 1:
                        posted_last.append(time.perf_counter())
                    app.post_message(Batch(lines, tick == ticks - 1))
                    wait = start + (tick + 1) / hz - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                done.set()

            thread = threading.Thread(target=produce, daemon=True)
            thread.start()
            latencies: list[float] = []
            while not done.is_set():
                await asyncio.sleep(0.3)
                before = len(app.key_times)
                t0 = time.perf_counter()
                await pilot.press("f9")
                while len(app.key_times) == before:
                    await asyncio.sleep(0.001)
                latencies.append(app.key_times[-1] - t0)
            thread.join()
            # after the burst: how long until the last line is drawn
            deadline = time.perf_counter() + 120
            while app.painted is None and time.perf_counter() < deadline:
                await asyncio.sleep(0.01)
            shown = app.painted if app.painted is not None else float("inf")
            # a screenful painted from cold (no strip cache)
            w = app.query_one("#w")
            lines_widget: Any = w.lines if isinstance(w, LogView) else w
            cache = getattr(lines_widget, "_cache", None) or getattr(lines_widget, "_render_line_cache", None)
            if cache is not None:
                cache.clear()
            t0 = time.perf_counter()
            for y in range(lines_widget.size.height):
                lines_widget.render_line(y)
            paint = time.perf_counter() - t0
            errors = len(w.index.blocks) if isinstance(w, LogView) else -1  # the first and its folded copies
            return {
                "errors": errors,
                "expected_errors": min(MAX_SPANS, sum(1 for no in range(1, per_batch * ticks + 1)
                                                      if no % 25_000 == 100)),
                "lines": app.appended,
                "key_max": max(latencies) if latencies else float("nan"),
                "key_p50": statistics.median(latencies) if latencies else float("nan"),
                "last_line": shown - posted_last[0],
                "paint": paint,
            }

    return asyncio.run(run())


def big_file(megabytes: int) -> dict[str, float]:
    """A log of `megabytes` MiB read by the real follower into LogView; memory, old-line paint, search."""
    rss = psutil.Process()

    async def run(path: Path) -> dict[str, float]:
        app = BenchApp("LogView")
        async with app.run_test(size=SIZE) as pilot:
            view = app.query_one(LogView)
            view.reset(path)
            await pilot.pause()
            gc.collect()
            rss0 = rss.memory_info().rss
            follower = LogFollower(path)
            t0 = time.perf_counter()
            n = 0
            while True:
                items = follower.poll()
                lines = [i for i in items if isinstance(i, LogLine)]
                view.append_lines(lines)
                n += len(lines)
                if not follower.has_more:
                    break
                await asyncio.sleep(0)  # let the UI breathe between batches, as the engine's 20 Hz does
            ingest = time.perf_counter() - t0
            follower.close()
            await pilot.pause()
            gc.collect()
            grown = rss.memory_info().rss - rss0
            t0 = time.perf_counter()
            await pilot.press("home")
            old_paint = time.perf_counter() - t0
            top = app.screen_text()[0]
            needle = "line 0000"  # not present: the search reads the whole indexed file and wraps
            t0 = time.perf_counter()
            view.index.find(needle, view.index.end - 1, forward=False)
            search = time.perf_counter() - t0
            # the same search from the pane (sliced on the event loop) while keys are pressed
            view._set_needle(needle)
            t0 = time.perf_counter()
            view.action_next_match()
            keys: list[float] = []
            while "searching" in view._note:
                before = len(app.key_times)
                k0 = time.perf_counter()
                app.post_message(events.Key("f9", None))
                while len(app.key_times) == before:
                    await asyncio.sleep(0.001)
                keys.append(app.key_times[-1] - k0)
                await asyncio.sleep(0.05)
            pane_search = time.perf_counter() - t0
            return {"lines": n, "ingest": ingest, "rss": grown, "home": old_paint, "search": search,
                    "pane_search": pane_search, "search_key_max": max(keys, default=0.0),
                    "search_keys": len(keys),
                    "index": view.index.memory_bytes(),
                    "rows": view.index.rows, "top_ok": float(top.strip().startswith("[2026"))}

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.log"
        target = megabytes << 20
        with open(path, "wb") as f:
            no = 1
            size = 0
            while size < target:
                lines, _ = make_lines(no, 50_000)
                chunk = ("\n".join(line.text for line in lines) + "\n").encode()
                f.write(chunk)
                size += len(chunk)
                no += 50_000
        return asyncio.run(run(path))


def isolated(fn: str, *args: Any) -> dict[str, float]:
    """Run `fn(*args)` of this module in a fresh interpreter (a clean heap, like the real dashboard)."""
    code = f"import json, bench.logview as b; print(json.dumps(b.{fn}(*{args!r})))"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        raise RuntimeError(f"{fn}{args} failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def row(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.logview", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (a smoke run, not the figures)")
    parser.add_argument("--big-mb", type=int, default=1024, help="size of the big-file run in MiB (0 skips it)")
    parser.add_argument("--parts", default="append,burst,big", help="comma-separated: append, burst, big")
    args = parser.parse_args(argv)
    args.parts = set(args.parts.split(","))
    quick = args.quick
    failures: list[str] = []
    out: Callable[[str], None] = lambda s: print(s, flush=True)  # noqa: E731

    out(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; batches of {BATCH} lines\n")
    out("== append cost and retained memory ==")
    widths = [10, 9, 14, 14]
    out(row(["widget", "lines", "µs/line", "memory MB"], widths))
    counts = [("LogView", 100_000), ("LogView", 1_000_000), ("Log", 100_000), ("Log", 1_000_000),
              ("RichLog", 10_000)]
    if quick:
        counts = [("LogView", 100_000), ("Log", 100_000), ("RichLog", 2_000)]
    for kind, n in counts if "append" in args.parts else []:
        per_line, mem = isolated("widget_memory", kind, n).values()
        out(row([kind, f"{n:,}", f"{per_line:.2f}", f"{mem / 1e6:.1f}"], widths))
        if kind == "LogView" and n == 1_000_000 and mem > 40e6:
            failures.append(f"LogView retained {mem / 1e6:.0f} MB for 1M lines (target < 40 MB)")

    seconds = 3.0 if quick else 10.0
    out(f"\n== burst: 50,000 lines/s for {seconds:.0f} s in 20 Hz batches, key pressed every 0.3 s ==")
    widths = [18, 9, 12, 12, 14, 14]
    out(row(["widget", "lines", "key p50 ms", "key max ms", "last line s", "paint ms"], widths))
    runs = [("LogView", 50_000, seconds), ("LogView+freeze", 50_000, seconds), ("Log", 50_000, seconds),
            ("RichLog (1 s)", 50_000, 1.0)]
    for label, rate, secs in runs if "burst" in args.parts else []:
        kind = label.split()[0]
        r = isolated("burst", kind, rate, secs)
        out(row([label, f"{int(r['lines']):,}", f"{r['key_p50'] * 1e3:.1f}", f"{r['key_max'] * 1e3:.1f}",
                 f"{r['last_line']:.2f}", f"{r['paint'] * 1e3:.2f}"], widths))
        if kind.startswith("LogView"):
            if not r["key_max"] < 0.2:
                failures.append(f"key press took {r['key_max'] * 1e3:.0f} ms during the burst (target < 200)")
            if r["errors"] != r["expected_errors"]:
                failures.append(f"{r['errors']:.0f} tracebacks counted, {r['expected_errors']:.0f} written")
            else:
                out(f"  LogView counted all {r['errors']:.0f} tracebacks of the burst")
            if not r["last_line"] < 1.0:
                failures.append(f"last line shown {r['last_line']:.2f} s after the burst (target < 1 s)")

    if args.big_mb and "big" in args.parts:
        mb = min(args.big_mb, 64) if quick else args.big_mb
        out(f"\n== a {mb} MiB log read by the real follower into LogView (max_rows 5M, ring 20k) ==")
        r = isolated("big_file", mb)
        out(f"lines {int(r['lines']):,}; rows kept {int(r['rows']):,}; ingest {r['ingest']:.1f} s "
            f"({r['lines'] / r['ingest']:,.0f} lines/s); index {r['index'] / 1e6:.0f} MB; "
            f"process RSS growth {r['rss'] / 1e6:.0f} MB")
        out(f"Home (oldest kept line, read back with pread) painted in {r['home'] * 1e3:.0f} ms; "
            f"a search that misses scans the file in {r['search']:.2f} s")
        out(f"the same search from the pane, in slices: {r['pane_search']:.2f} s; "
            f"{r['search_keys']:.0f} keys pressed meanwhile, slowest handled in {r['search_key_max'] * 1e3:.0f} ms")
        if r["search_key_max"] > 0.2:
            failures.append(f"a key took {r['search_key_max'] * 1e3:.0f} ms during a search (target < 200 ms)")
        if not r["top_ok"]:
            failures.append("the oldest kept line did not render from the file")
        if r["home"] > 1.0:
            failures.append(f"Home took {r['home']:.2f} s (target < 1 s)")
        if r["rss"] > 200e6:
            failures.append(f"RSS grew {r['rss'] / 1e6:.0f} MB for the big log (target < 200 MB)")

    out("")
    if failures:
        out("MISSED: " + "; ".join(failures))
        return 1
    out("all LogView targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
