"""Long logs: `symmtui wait` on a 1 GB existing log (time to verdict, peak RSS) and `scan` vs grep by cores.

`python -m bench.longlog` (a few minutes; `--quick` for 256 MB files, targets not judged). Every
baseline runs in the same run on the same file:
  - wait: the old path (the log judged from its start) for the same log;
  - scan: `grep -c -E '<crash alternatives>'`, and `scan_file(workers=1)` (one process), all pinned
    to the same cores.
Targets (exit 1 when missed): a verdict from `symmtui wait` on a 1 GB existing log in < 1 s;
scan >= 0.5x grep's throughput on 2 cores; scan faster than grep where there are >= 8 cores.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.engine import CRASH_ALTERNATIVES, STARTUP, _env, ensure_bytecode, make_log, serving_block

WAIT_TARGET_S = 1.0
TWO_CORE_TARGET = 0.5
MANY_CORE_TARGET = 1.0
NEW_LAUNCH_CRASH = (
    STARTUP
    + "[2026-11-30 08:00:20 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
    + '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2714, in run\n'
    + "    self.event_loop()\n"
    + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    + "[2026-11-30 08:00:21] Received sigquit from a child process. It usually means the child failed.\n"
).replace("2026-11-29 09:40", "2026-11-30 08:00")
OLD_PATH = (  # the engine judging the log from its start (no last-launch attach), as `wait` did before
    "import sys; from symmtui.bringup.engine import Bringup; from symmtui.judge.readiness import ReadinessConfig; "
    "b = Bringup(sys.argv[1], config=ReadinessConfig(timeout=600, stall=None), last_launch=False); b.start(); "
    "s = b.wait_final(); b.stop(); print(s.state.value.upper()); sys.exit(0 if s.state.value == 'ready' else 1)"
)


def _run_timed(argv: list[str], marker: str | tuple[str, ...], cpus: set[int] | None = None) -> tuple[float, float, float, str]:
    """(seconds to the first stdout line starting with ``marker``, seconds to exit, peak RSS MB, stdout)."""
    def pin() -> None:
        if cpus is not None:
            os.sched_setaffinity(0, cpus)

    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=_env(), preexec_fn=pin)
    assert proc.stdout is not None
    seen = float("nan")
    lines: list[str] = []
    for line in proc.stdout:
        if seen != seen and line.startswith(marker):
            seen = time.perf_counter() - t0
        lines.append(line)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seen, took, usage.ru_maxrss / 1024, "".join(lines)


def _warm(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(8 << 20):
            pass


def bench_wait(tmp: Path, size: int, baseline: bool) -> bool:
    log = tmp / "wait.log"
    block = serving_block(random.Random(1))
    with open(log, "wb") as fh:
        # A launch that served for long and was killed without a trace (no verdict in its lines: the
        # old path has to read all of them), then a relaunch appended that crashes in its first seconds.
        fh.write(STARTUP.encode())
        while fh.tell() < size:
            fh.write(block)
        fh.write(NEW_LAUNCH_CRASH.encode())
    serving = tmp / "serving.log"  # a server up for long: no launch start anywhere near the end
    make_log(serving, size)
    mb = log.stat().st_size / 1e6
    rows: list[tuple[str, float, float, float, str]] = []
    floor = [sys.executable, "-c", "import symmtui.cli, symmtui.verbs.wait, symmtui.build, "
             "symmtui.verbs.printer; print('imported')"]
    _, took, rss, _ = _run_timed(floor, "imported")
    rows.append(("floor: start python, import what wait imports", took, took, rss, "-"))
    wait = [sys.executable, "-m", "symmtui", "wait", "--timeout", "600", "--stall", "0", "--log"]
    for name, path in (("last launch 1 KB before the end (crashes)", log),
                       ("no launch start in the last 64 MB", serving)):  # (make_log ends with a crash)
        _warm(path)
        verdict, took, rss, out = _run_timed([*wait, str(path)], ("CRASHED", "READY", "TIMED"))
        head = next((ln for ln in out.splitlines() if ln.startswith(("CRASHED", "READY", "TIMED"))), "?")
        rows.append((f"symmtui wait: {name}", verdict, took, rss, head))
    if baseline:
        _warm(log)
        verdict, took, rss, out = _run_timed([sys.executable, "-c", OLD_PATH, str(log)], "CRASHED")
        head = next((ln for ln in out.splitlines() if ln.startswith("CRASHED")), "?")
        rows.append(("old path: the same log judged from its start", verdict, took, rss, head))
    print(f"wait on an existing {mb:.0f} MB SGLang-like log, page cache warm (one run each)")
    print("  verdict: the verdict line printed (from process start); engine: the engine's own clock at the")
    print("  verdict (attach + judge, without Python's start); exit: the process ended (after the crash")
    print("  settle and the line count of the skipped part, for the line numbers it prints)")
    print(f"  {'method':<56}{'verdict':>9}{'engine':>9}{'exit':>9}{'peak RSS':>10}")
    for name, verdict, took, rss, head in rows:
        m = re.search(r" after ([0-9.]+) s", head)
        engine = f"{float(m.group(1)):>8.1f}s" if m else f"{'-':>9}"
        print(f"  {name:<56}{verdict:>8.2f}s{engine}{took:>8.2f}s{rss:>7.0f} MB")
    for name, *_, head in rows[1:]:
        print(f"  {name.split(':')[-1].strip()}: {head[:100]}")
    ok = rows[1][1] < WAIT_TARGET_S
    print(f"  target: verdict < {WAIT_TARGET_S:.0f} s on a >= 1 GB log: {'met' if ok else 'NOT met'}"
          f"{'' if mb >= 1000 else ' (file under 1 GB: not judged)'}")
    return ok or mb < 1000


def bench_scan(tmp: Path, size: int, runs: int) -> bool:
    log = tmp / "scan.log"
    make_log(log, size)
    _warm(log)
    mb = log.stat().st_size / 1e6
    have = sorted(os.sched_getaffinity(0))
    sets = [("2 cores", set(have[:2]))] if len(have) >= 2 else []
    if len(have) > 8:
        sets.append(("8 cores", set(have[:8])))
    if len(have) > 2:
        sets.append((f"{len(have)} cores", set(have)))
    ok = True
    print(f"scan of a {mb:.0f} MB SGLang-like log, page cache warm, best of {runs}; load average at start "
          f"{os.getloadavg()[0]:.1f}")
    print(f"  {'cores':<10}{'method':<46}{'seconds':>9}{'MB/s':>8}{'vs grep':>9}")
    grep = ["grep", "-c", "-E", CRASH_ALTERNATIVES, str(log)]
    scan = [sys.executable, "-m", "symmtui", "scan", str(log)]
    one = [sys.executable, "-c", "import sys; from symmtui.bringup.scan import scan_file; "
           "sys.exit(scan_file(sys.argv[1], workers=1).exit_code)", str(log)]
    for label, cpus in sets:
        best: dict[str, float] = {}
        for _ in range(runs):  # interleaved, so a burst of load elsewhere hits all three alike
            for name, argv in (("grep", grep), ("scan", scan), ("one", one)):
                _, took, _, _ = _run_timed(argv, "\0", cpus)
                best[name] = min(best.get(name, float("inf")), took)
        g = best["grep"]
        for name, text in (("grep", "grep -c -E <crash alternatives>"),
                           ("scan", "symmtui scan (default: every idle core)"),
                           ("one", "scan_file(workers=1): the sequential path")):
            print(f"  {label:<10}{text:<46}{best[name]:>9.2f}{mb / best[name]:>8.0f}{g / best[name]:>8.2f}x")
        ratio = g / best["scan"]
        if len(cpus) == 2:
            met = ratio >= TWO_CORE_TARGET
            print(f"  target on 2 cores: >= {TWO_CORE_TARGET}x grep: {'met' if met else 'NOT met'}")
            ok &= met
        elif len(cpus) >= 8:
            met = ratio > MANY_CORE_TARGET
            print(f"  target on {len(cpus)} cores: faster than grep: {'met' if met else 'NOT met'}")
            ok &= met
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="256 MB files, one run, no old-path baseline")
    ap.add_argument("--wait-mb", type=int, default=1024)
    ap.add_argument("--scan-mb", type=int, default=600)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("wait", "scan"), help="run one half")
    ap.add_argument("--no-old-path", action="store_true", help="skip the wait baseline (the old path reads the whole log)")
    args = ap.parse_args(argv)
    if args.quick:
        args.wait_mb, args.scan_mb, args.runs = 256, 256, 1
    if shutil.which("grep") is None:
        raise SystemExit("bench.longlog needs grep for its baseline")
    ensure_bytecode()
    ok = True
    tmp = Path(tempfile.mkdtemp(prefix="bench-longlog-"))
    try:
        if args.only in (None, "wait"):
            ok &= bench_wait(tmp, args.wait_mb << 20, baseline=not (args.quick or args.no_old_path))
            for f in tmp.iterdir():
                f.unlink()
            print()
        if args.only in (None, "scan"):
            ok &= bench_scan(tmp, args.scan_mb << 20, args.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
