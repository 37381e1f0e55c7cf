"""The record layer's cost: `wait` on a finished multi-rank log (CPU per line) and `scan` throughput, this tree
against a git revision, in the same run (``python -m bench.records --against REV``).

Both trees judge the same generated files: an SGLang-like TP8 log (start-up of 8 ranks, then serving lines,
warnings and tracebacks here and there, a crash at the end) of ``--lines`` lines for `wait`, and the same shape at
``--size-mb`` for `scan`. The figure is the median over ``--trials`` runs of each child process's CPU seconds
(user + system, its helper processes included) and wall seconds; on a loaded machine trust the CPU rows. Target (issue 20): this tree within 10 % of the revision before the record
layer. Exit 0: the figures are a measurement.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.engine import READY, serving_block
from bench.startup import REPO, export

RANKS = 8


def make_log(path: Path, size: int) -> tuple[int, int]:
    """An SGLang TP8 log of about ``size`` bytes: every rank's start-up, serving, warnings, tracebacks, a crash.
    Returns (bytes, lines)."""
    rng = random.Random(5)
    startup = "".join(
        f"[2026-11-29 09:40:{9 + i:02d} TP{r}] {msg}\n"
        for i, msg in enumerate(("Init torch distributed begin.", "Init torch distributed ends. mem usage=0.12 GB",
                                 "Load weight begin. avail mem=93.21 GB",
                                 "Load weight end. type=Glm4MoeForCausalLM, dtype=torch.bfloat16, avail mem=40.11 GB, "
                                 "mem usage=53.10 GB.", "KV Cache is allocated. #tokens: 612352, K size: 12.2 GB",
                                 "Capture cuda graph begin. This can take up to several minutes. avail mem=10.1 GB"))
        for r in range(RANKS))
    block = serving_block(rng, 20_000)
    tb = (b"[2026-11-29 12:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
          b'  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2714, in run\n'
          b"    self.event_loop()\n"
          b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
    ranks = b"".join(f"[2026-11-29 11:00:00 TP{r}] Cache flushed successfully!\n".encode() for r in range(RANKS))
    with open(path, "wb") as fh:
        fh.write(b"[2026-11-29 09:40:03] server_args=ServerArgs(model_path='/models/M', tp_size=8, port=30000)\n")
        fh.write(startup.encode())
        fh.write(READY.encode())
        n = 0
        while n < size:
            fh.write(block)
            fh.write(ranks)
            n += len(block) + len(ranks)
            if rng.random() < 0.05:
                fh.write(tb)
        fh.write(b"[2026-11-29 19:00:00] Received sigquit from a child process. It usually means the child failed.\n")
    data = path.read_bytes()
    return len(data), data.count(b"\n")


def run_once(argv: list[str], tree: Path) -> tuple[float, float]:
    """(CPU seconds of the child, wall seconds) of one run from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"{argv}: exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.records", description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="REV", required=True, help="the git revision to compare with")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--lines", type=int, default=400_000, help="lines of the log `wait` judges")
    ap.add_argument("--size-mb", type=int, default=200, help="size of the log `scan` reads")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-records-") as tmp_name:
        tmp = Path(tmp_name)
        trees = {"this tree": REPO, args.against: export(args.against, tmp / "against")}
        small, big = tmp / "wait.log", tmp / "scan.log"
        _, nlines = make_log(small, args.lines * 130)
        size, _ = make_log(big, args.size_mb << 20)
        rows = {
            "wait (CPU us per line)": (["-m", "symmtui", "wait", "--log", str(small), "--timeout", "600",
                                        "--stall", "0", "--no-record"], nlines),
            "scan (MB/s, wall)": (["-m", "symmtui", "scan", str(big)], size),
            "scan (CPU s per GB)": (["-m", "symmtui", "scan", str(big)], size),
        }
        print(f"`wait` log: {nlines} lines; `scan` log: {size / 1e6:.0f} MB; median of {args.trials} runs; "
              f"{os.cpu_count()} cores")
        print(f"| measure | this tree | {args.against} | ratio |")
        print("|---|---|---|---|")
        for name, (cmd, unit) in rows.items():
            got: dict[str, float] = {}
            for label, tree in trees.items():
                runs = [run_once(cmd, tree) for _ in range(args.trials)]
                if name.startswith("wait"):
                    got[label] = statistics.median(c for c, _ in runs) / unit * 1e6
                elif "CPU" in name:
                    got[label] = statistics.median(c for c, _ in runs) / unit * 1e9
                else:
                    got[label] = unit / 1e6 / statistics.median(w for _, w in runs)
            mine, theirs = got["this tree"], got[args.against]
            print(f"| {name} | {mine:.2f} | {theirs:.2f} | {mine / theirs:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
