"""A flood of matching lines costs what a line costs: `scan`, `wait --log` and the dashboard's engine path
(EventBuilder.feed_many) on 10 MB made by repeating a real SGLang log in which half the lines are retraction
warnings, beside 10 MB of its decode lines alone, in the same run (``python -m bench.flood``).

The source: tests/fixtures/sglang-2746-decode-retraction.log (sgl-project/sglang#2746: five `Decode batch` lines,
five ranks' `Decode out of memory happened. #retracted_reqs ...`), repeated as it is (its lines, stamps included: no
engine line is invented). Rows: MB/s (per second of the median wall, and of the median CPU of ``--trials`` child processes for the verbs,
flood and plain interleaved; per second of the median wall of in-process runs for feed_many) and the flood's ratio
to the plain log: on a loaded machine trust the CPU rows. Target (issue 29): `scan` of the flood at >= 50 MB/s on 2 cores.
Exit 0: the figures are a measurement.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests" / "fixtures" / "sglang-2746-decode-retraction.log"
TARGET_MB_S = 50.0


def make_logs(tmp: Path, size: int) -> tuple[Path, Path]:
    """(flood, plain): ``size`` bytes each, the fixture repeated, and its decode lines alone repeated."""
    text = SOURCE.read_text(encoding="utf-8")
    decode = "".join(ln + "\n" for ln in text.splitlines() if "Decode batch" in ln)
    out = []
    for name, block in (("flood.log", text), ("plain.log", decode)):
        path = tmp / name
        data = block.encode() * (size // len(block.encode()) + 1)
        path.write_bytes(data[: data.rfind(b"\n", 0, size) + 1])
        out.append(path)
    return out[0], out[1]


def _child(argv: list[str], tree: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system, its helper processes too) of one child process."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"{argv}: exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def feed_many_seconds(path: Path) -> float:
    """Seconds the live engine's event builder takes over the file's lines (batches as the follower hands them)."""
    from symmtui.judge.events import EventBuilder
    from symmtui.logs.follow import iter_lines

    batches = [list(b) for b in iter_lines(path)]
    builder = EventBuilder(thin_serving=True)
    t0 = time.perf_counter()
    for batch in batches:
        builder.feed_many(batch)
    builder.flush()
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.flood", description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=10.0)
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args(argv)
    from bench.engine import ensure_bytecode

    ensure_bytecode()  # as an installed package has it: the verbs' starts do not compile symmtui again
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as tmp_name:
        flood, plain = make_logs(Path(tmp_name), int(args.size_mb * 1e6))
        size = flood.stat().st_size
        print(f"logs: {size / 1e6:.1f} MB each ({SOURCE.name} repeated; plain: its decode lines alone); "
              f"median of {args.trials} runs; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
        print("| measure | flood (MB/s) | plain (MB/s) | flood / plain |")
        print("|---|---|---|---|")
        verbs = {
            "scan": ["-m", "symmtui", "scan"],
            "wait --log": ["-m", "symmtui", "wait", "--timeout", "600", "--stall", "0", "--no-record", "--log"],
        }
        for name, argv in verbs.items():
            runs: dict[str, list[tuple[float, float]]] = {"flood": [], "plain": []}
            for _ in range(args.trials):  # interleaved: a load that comes and goes weighs on both alike
                for label, path in (("flood", flood), ("plain", plain)):
                    runs[label].append(_child([*argv, str(path)], REPO))
            for what, k in (("wall", 0), ("CPU", 1)):
                got = {label: size / 1e6 / statistics.median(r[k] for r in rs) for label, rs in runs.items()}
                print(f"| {name} (per {what} second) | {got['flood']:.1f} | {got['plain']:.1f} | "
                      f"{got['flood'] / got['plain']:.2f} |")
        fed = {label: size / 1e6 / statistics.median(feed_many_seconds(path) for _ in range(args.trials))
               for label, path in (("flood", flood), ("plain", plain))}
        print(f"| EventBuilder.feed_many (per wall second) | {fed['flood']:.1f} | {fed['plain']:.1f} | "
              f"{fed['flood'] / fed['plain']:.2f} |")
    print(f"target: scan of the flood >= {TARGET_MB_S:g} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
