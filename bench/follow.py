"""Log follower figures: poll() throughput, append->on_batch latency, peak RSS on a 1 GB log, a 50k lines/s flood.

`python -m bench.follow` (about a minute; `--quick` for a smaller run; `--flood-only` for the two
floods alone). Each figure is printed next to a baseline measured in the same run. Exit 1 when a
target is missed:
  - poll() >= 650k lines/s on an SGLang-like log (what the engine needs),
  - append -> on_batch median <= 50 ms over >= 20 trials (the shell loop's expectation is 2.5 s),
  - following a 1 GB log from its start: peak RSS < 150 MB,
  - 50k lines/s for 10 s from a writer process: no line lost, peak RSS < 150 MB, both when it appends
    to a file (LogFollower) and when it is a log command writing to its stdout (CommandFollower).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from symmtui.logs.follow import FileNotice, LogFollower, LogItem, LogLine, iter_lines
from symmtui.logs.logcmd import CommandFollower, LogCommand

FLOOD_RATE = 50_000
LINES_TARGET = 650_000
LATENCY_TARGET_S = 0.050
RSS_TARGET_MB = 150.0
SHELL_LOOP_PERIOD_S = 5.0
REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "tests" / "fixtures" / "log_writer.py"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# One "minute" of an SGLang TP8 start-up, as bringup-facts.md describes it (our own words).
_BLOCK_LINES = [
    "[2026-11-29 09:40:09 TP{r}] Init torch distributed begin.",
    "[2026-11-29 09:40:12 TP{r}] Init torch distributed ends. mem usage=0.42 GB",
    "[2026-11-29 09:40:13 TP{r}] Load weight begin. avail mem=93.21 GB",
    "[2026-11-29 09:41:20 TP{r}] Load weight end. type=GlmForCausalLM, dtype=torch.bfloat16, avail mem=41.07 GB, "
    "mem usage=52.14 GB.",
    "[2026-11-29 09:41:21 TP{r}] KV Cache is allocated. #tokens: 1231872, K size: 8.81 GB, V size: 8.81 GB",
    "[2026-11-29 09:41:22 TP{r}] Capture cuda graph begin. This can take up to several minutes. avail mem=22.4 GB",
    "[2026-11-29 09:41:55 TP{r}] Capture cuda graph end. Time elapsed: 32.1 s. mem usage=1.42 GB. avail mem=20.9 GB",
    "[2026-11-29 09:42:01 TP{r}] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0",
    "[2026-11-29 09:42:02 TP{r}] Decode batch. #running-req: 1, #token: 40, token usage: 0.00, gen throughput "
    "(token/s): 61.22, #queue-req: 0",
]


def _block() -> bytes:
    out = []
    for r in range(8):
        out += [line.format(r=r) for line in _BLOCK_LINES]
    shards = "".join(f"\rLoading safetensors checkpoint shards: {i * 100 // 83:3d}% Completed | {i}/83" for i in range(84))
    out.append(shards)
    out.append("\x1b[33mWARNING\x1b[0m TorchSymmMemCommunicator: Device capability 12 not supported")
    out.append('INFO:     127.0.0.1:53122 - "GET /health HTTP/1.1" 200 OK')
    return ("\n".join(out) + "\n").encode()


def make_log(path: Path, size: int) -> int:
    """Write an SGLang-like log of about `size` bytes; returns its line count."""
    block = _block()
    reps = max(1, size // len(block))
    chunk = block * max(1, (4 << 20) // len(block))
    per_chunk = chunk.count(b"\n")
    lines = 0
    with open(path, "wb") as fh:
        written = 0
        while written + len(chunk) <= reps * len(block):
            fh.write(chunk)
            written += len(chunk)
            lines += per_chunk
        rest = (reps * len(block) - written) // len(block)
        fh.write(block * rest)
        lines += block.count(b"\n") * rest
    return lines


def _best(fn: Callable[[], tuple[float, int]], rounds: int) -> tuple[float, int]:
    """Best of `rounds` (this box is shared: the best run is the least disturbed one)."""
    runs = [fn() for _ in range(rounds)]
    return min(runs)


def _timed(fn: Callable[[], int]) -> Callable[[], tuple[float, int]]:
    def run() -> tuple[float, int]:
        t0 = time.perf_counter()
        n = fn()
        return time.perf_counter() - t0, n
    return run


def throughput(path: Path, rounds: int) -> tuple[list[tuple[str, float, int]], float]:
    """(name, seconds, lines) for the baselines and ours (best of `rounds`); also poll()'s lines/s."""
    rows: list[tuple[str, float, int]] = []

    def wc() -> int:
        return int(subprocess.run(["wc", "-l", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])

    def naive_count() -> int:
        n = 0
        with open(path, "rb") as fh:
            for _ in fh:
                n += 1
        return n

    def naive_decode() -> int:
        # What a straightforward follower does per line: decode, drop the newline, strip ANSI.
        n = 0
        with open(path, encoding="utf-8", errors="replace", newline="\n") as fh:
            for line in fh:
                text = line.rstrip("\n")
                _ANSI.sub("", text) if "\x1b" in text else text
                n += 1
        return n

    def ours_poll() -> tuple[float, int]:
        # Only the time inside poll() counts; the check that every line came once is done outside it.
        spent = 0.0
        n = 0
        with LogFollower(path) as f:
            while True:
                t0 = time.perf_counter()
                items = f.poll()
                spent += time.perf_counter() - t0
                n += sum(1 for x in items if isinstance(x, LogLine) and not x.progress)
                if not f.has_more:
                    return spent, n

    def ours_iter() -> tuple[float, int]:
        spent = 0.0
        n = 0
        it = iter_lines(path)
        while True:
            t0 = time.perf_counter()
            batch = next(it, None)
            spent += time.perf_counter() - t0
            if batch is None:
                return spent, n
            n += len(batch)

    for name, fn in [
        ("wc -l (C, counts only)", _timed(wc)),
        ("python: for line in open(rb) (counts only)", _timed(naive_count)),
        ("python: for line + decode + ANSI strip", _timed(naive_decode)),
        ("LogFollower.poll() -> LogLine", ours_poll),
        ("iter_lines() -> LogLine (scan/backfill)", ours_iter),
    ]:
        seconds, n = _best(fn, rounds)
        rows.append((name, seconds, n))
    poll_rate = rows[3][2] / rows[3][1]
    return rows, poll_rate


def latency(tmp: Path, trials: int) -> list[float]:
    """A writer process appends one line; time from its write() to our on_batch seeing it."""
    log = tmp / "latency.log"
    proc = subprocess.Popen([sys.executable, str(WRITER), str(log)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    seen: dict[str, float] = {}
    cond = threading.Condition()

    def on_batch(items: list[LogItem]) -> None:
        now = time.monotonic()
        with cond:
            for it in items:
                if isinstance(it, LogLine):
                    seen[it.text] = now
            cond.notify_all()

    follower = LogFollower(log)
    stop = threading.Event()
    t = threading.Thread(target=follower.watch, args=(stop, on_batch))
    t.start()
    delays = []
    try:
        for i in range(trials):
            time.sleep(0.02 + (i % 7) * 0.013)  # spread the writes over the watcher's step phase
            text = f"The server is fired up and ready to roll! #{i}"
            proc.stdin.write(json.dumps({"op": "write", "data": text + "\n"}) + "\n")
            proc.stdin.flush()
            written = float(json.loads(proc.stdout.readline())["t"])
            with cond:
                if not cond.wait_for(lambda text=text: text in seen, 10):
                    raise RuntimeError(f"line {i} never arrived")
                delays.append(seen[text] - written)
    finally:
        stop.set()
        t.join(10)
        follower.close()
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
    return delays


def _child_follow(path: str, mode: str, expect: int) -> int:
    """Runs in a child process: follow `path` and report lines seen and peak RSS as JSON."""
    seen = 0
    notices: list[str] = []
    biggest = 0
    if mode == "whole":
        f = LogFollower(path)
        t0 = time.perf_counter()
        while True:
            items = f.poll()
            biggest = max(biggest, len(items))
            seen += sum(1 for x in items if isinstance(x, LogLine) and not x.progress)
            if not f.has_more:
                break
        f.close()
        elapsed = time.perf_counter() - t0
    else:  # flood / command: follow live until `expect` lines were seen (or the command exited)
        done = threading.Event()
        batches = 0

        def on_batch(items: list[LogItem]) -> None:
            nonlocal seen, biggest, batches
            biggest = max(biggest, len(items))
            batches += 1
            for x in items:
                if isinstance(x, LogLine):
                    seen += not x.progress
                elif isinstance(x, FileNotice):
                    notices.append(x.kind)
                    if x.kind in ("exited", "error"):
                        done.set()  # its output is all read before this notice
            if seen >= expect:
                done.set()

        f: LogFollower | CommandFollower
        if mode == "command":  # the writer is the log command: it floods its stdout, its report goes to `path`
            f = CommandFollower(LogCommand.from_argv([
                sys.executable, str(WRITER), "/dev/stdout", "--rate", str(FLOOD_RATE),
                "--seconds", str(expect / FLOOD_RATE), "--report", path]))
        else:
            f = LogFollower(path)
        stop = threading.Event()
        t = threading.Thread(target=f.watch, args=(stop, on_batch))
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        t.start()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        done.wait(120)
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        stop.set()
        t.join(10)
        f.close()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sys.stdout.write(json.dumps({"lines": seen, "rss_mb": rss_mb, "seconds": elapsed, "biggest_batch": biggest,
                                 "notices": notices, "cpu_s": cpu if mode != "whole" else None,
                                 "batches": batches if mode != "whole" else None}) + "\n")
    return 0


def _child(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bench.follow", "--child", *args], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)


def baseline_rss() -> float:
    code = ("import resource, symmtui.logs.follow, watchfiles._rust_notify;"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                cwd=REPO).stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.follow", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller files and a shorter flood")
    parser.add_argument("--flood-only", action="store_true", help="only the two 50k lines/s floods (file, command)")
    parser.add_argument("--child", nargs=3, metavar=("PATH", "MODE", "EXPECT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child_follow(args.child[0], args.child[1], int(args.child[2]))

    size = (64 if args.quick else 128) << 20
    big = (128 if args.quick else 1024) << 20
    flood_s = 2.0 if args.quick else 10.0
    ok = True
    tmp = Path(tempfile.mkdtemp(prefix="bench-follow-"))
    try:
        if not args.flood_only:
            log = tmp / "sglang.log"
            lines = make_log(log, size)
            real = log.stat().st_size
            print(f"throughput: {real / 1e6:.0f} MB SGLang-like log, {lines:,} lines (page cache warm, best of {2 if args.quick else 3})")
            make_lines_rows, rate = throughput(log, 2 if args.quick else 3)
            print(f"  {'reader':46} {'lines/s':>12} {'MB/s':>8} {'lines':>11}")
            for name, seconds, n in make_lines_rows:
                print(f"  {name:46} {n / seconds:12,.0f} {real / seconds / 1e6:8.0f} {n:11,}")
            good = rate >= LINES_TARGET and all(r[2] == lines for r in make_lines_rows[3:])
            ok &= good
            print(f"  target poll() >= {LINES_TARGET:,} lines/s, every line once: {'met' if good else 'MISSED'}")
            log.unlink()

            trials = 20 if args.quick else 40
            delays = sorted(latency(tmp, trials))
            med = statistics.median(delays)
            p95 = delays[int(round(0.95 * (len(delays) - 1)))]
            print(f"\nlatency: writer process append -> on_batch, {trials} trials (inotify via watchfiles)")
            print(f"  {'':32} {'median':>10} {'p95':>10} {'max':>10}")
            print(f"  {'LogFollower.watch()':32} {med * 1000:8.1f}ms {p95 * 1000:8.1f}ms {delays[-1] * 1000:8.1f}ms")
            print(f"  {'shell loop, sleep 5 (expected)':32} {SHELL_LOOP_PERIOD_S / 2 * 1000:8.0f}ms "
                  f"{SHELL_LOOP_PERIOD_S * 0.95 * 1000:8.0f}ms {SHELL_LOOP_PERIOD_S * 1000:8.0f}ms")
            good = med <= LATENCY_TARGET_S
            ok &= good
            print(f"  target median <= {LATENCY_TARGET_S * 1000:.0f} ms: {'met' if good else 'MISSED'} "
                  f"({SHELL_LOOP_PERIOD_S / 2 / med:,.0f}x sooner than the loop)")

            base = baseline_rss()
            print(f"\npeak RSS (child processes; python + symmtui.logs.follow + watchfiles imported: {base:.0f} MB)")
            log = tmp / "big.log"
            lines = make_log(log, big)
            proc = _child([str(log), "whole", str(lines)])
            out, _ = proc.communicate(timeout=600)
            rep = json.loads(out)
            good = rep["lines"] == lines and rep["rss_mb"] < RSS_TARGET_MB
            ok &= good
            print(f"  follow a {log.stat().st_size / 1e9:.2f} GB log from its start: {rep['lines']:,}/{lines:,} lines "
                  f"in {rep['seconds']:.1f} s, biggest batch {rep['biggest_batch']:,} items, "
                  f"peak RSS {rep['rss_mb']:.0f} MB (target < {RSS_TARGET_MB:.0f}): {'met' if good else 'MISSED'}")
            with LogFollower(log, tail_lines=1000) as f:
                t0 = time.perf_counter()
                first = f.poll()
                attach = time.perf_counter() - t0
                n_tail = sum(1 for x in first if isinstance(x, LogLine))
                t0 = time.perf_counter()
                n_back = sum(len(b) for b in f.backfill())
                back = time.perf_counter() - t0
            print(f"  attach with tail_lines=1000: {n_tail} lines in {attach * 1000:.1f} ms "
                  f"(vs {rep['seconds'] * 1000:.0f} ms reading it all); backfill of the rest: "
                  f"{n_back:,} lines in {back:.1f} s")
            log.unlink()

        rate_flood = FLOOD_RATE
        total = int(rate_flood * flood_s)
        log = tmp / "flood.log"
        log.write_bytes(b"")
        proc = _child([str(log), "flood", str(total)])
        assert proc.stdout is not None
        proc.stdout.readline()  # "ready"
        writer = subprocess.run([sys.executable, str(WRITER), str(log), "--rate", str(rate_flood), "--seconds",
                                 str(flood_s)], capture_output=True, text=True, check=True, timeout=flood_s * 10)
        wrep = json.loads(writer.stdout)
        out, _ = proc.communicate(timeout=120)
        rep = json.loads(out)
        good = rep["lines"] == wrep["lines"] == total and rep["rss_mb"] < RSS_TARGET_MB
        ok &= good
        print(f"\nflood: a writer process at {rate_flood:,} lines/s for {flood_s:g} s "
              f"(it took {wrep['seconds']:.1f} s)")
        print(f"  written {wrep['lines']:,}, followed {rep['lines']:,}, lost {wrep['lines'] - rep['lines']:,}; "
              f"biggest batch {rep['biggest_batch']:,}; peak RSS {rep['rss_mb']:.0f} MB: {'met' if good else 'MISSED'}")
        print(f"  follower CPU {rep['cpu_s']:.2f} s in {rep['seconds']:.1f} s "
              f"({100 * rep['cpu_s'] / rep['seconds']:.0f} % of a core), {rep['batches']:,} batches")

        report = tmp / "command-flood.json"
        proc = _child([str(report), "command", str(total)])
        out, _ = proc.communicate(timeout=120)
        rep = json.loads(out.split("\n", 1)[1])
        wrep = json.loads(report.read_text())
        good = rep["lines"] == wrep["lines"] == total and rep["rss_mb"] < RSS_TARGET_MB and "error" not in rep["notices"]
        ok &= good
        print(f"\ncommand flood: the same writer as a log command (`--log-cmd`: its stdout, one pipe) at "
              f"{rate_flood:,} lines/s for {flood_s:g} s (it took {wrep['seconds']:.1f} s)")
        print(f"  written {wrep['lines']:,}, followed {rep['lines']:,}, lost {wrep['lines'] - rep['lines']:,}; "
              f"biggest batch {rep['biggest_batch']:,}; peak RSS {rep['rss_mb']:.0f} MB: {'met' if good else 'MISSED'}")
        print(f"  follower CPU {rep['cpu_s']:.2f} s in {rep['seconds']:.1f} s "
              f"({100 * rep['cpu_s'] / rep['seconds']:.0f} % of a core), {rep['batches']:,} batches")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nbench.follow: {'all targets met' if ok else 'a target was MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
