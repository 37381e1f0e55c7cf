"""Bundle figures: what recording costs `symmtui wait` at the verdict, and the size of a 10-minute TP8 bring-up's bundle.

`python -m bench.bundle` (about a minute). Baselines in the same run:
  - ready line written -> `symmtui wait` exited, median of N, with the bundle recorded and with
    `--no-record` (trials interleaved, same files); target: recording adds <= 10 ms to the median;
  - a 10-minute TP8 bring-up (the fixture's real SGLang log lines, 600 one-second rounds of the 8-GPU
    stand-in, a snapshot per engine batch): the compressed bundle against the raw log and the log
    gzipped alone; target: the file <= the 8 MiB bound (format.MAX_FILE_BYTES).
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

from msgspec.structs import replace

from bench.engine import ensure_bytecode

REPO = Path(__file__).resolve().parents[1]
ADDED_TARGET_S = 0.010


def wait_latency(trials: int, tmp: Path) -> tuple[list[float], list[float]]:
    """(with the bundle, with --no-record): write -> exit seconds per trial, interleaved."""
    import bench.engine as eng

    rec: list[float] = []
    off: list[float] = []
    for k in range(trials):
        for record, out in ((True, rec), (False, off)):
            log = tmp / f"w{k}-{record}.log"
            log.write_text(eng.STARTUP)
            argv = [sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--timeout", "60"]
            if not record:
                argv.append("--no-record")
            import subprocess

            state = tmp / f"state{k}"  # the bundle goes to the state dir's store: this run's own
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env={**eng._env(), "XDG_STATE_HOME": str(state)})
            assert proc.stdout is not None
            while "loading weights" not in proc.stdout.readline():
                if proc.poll() is not None:
                    raise SystemExit("symmtui wait exited early")
            with open(log, "a") as fh:
                fh.write(eng.READY)
                fh.flush()
                t_write = time.monotonic()
            for _line in proc.stdout:
                pass
            proc.wait()
            out.append(time.monotonic() - t_write)
            if record and not list(state.glob("symmtui/bundles/*.symmtui-bundle.json.gz")):
                raise SystemExit("no bundle was written")
    return rec, off


def bringup_bundle(tmp: Path) -> tuple[int, int, int, float, float]:
    """(raw log bytes, log gzipped alone, bundle bytes, ingest seconds, write seconds) of a 10-minute TP8 bring-up."""
    from symmtui.bringup.engine import EngineUpdate
    from symmtui.bundle.recorder import Recorder
    from symmtui.judge.board import board_of
    from symmtui.judge.verdict import NodeView
    from symmtui.launch.envinfo import EnvInfo
    from symmtui.session.messages import EngineBatch, GpuRound, TopologyRead
    from tests.ui.kit import READY_LOG, fixed_gpus, read_lines, replay

    lines = read_lines(READY_LOG)
    events, snap = replay(lines)
    gpus, topo = fixed_gpus(0.9)
    raw = READY_LOG.read_bytes()
    rec = Recorder(name="bench", host="h", command=None, dest=tmp / "b.symmtui-bundle.json.gz",
                   env=lambda: EnvInfo(taken_at=0.0, symmtui="bench"))
    t0 = time.perf_counter()
    rec.ingest(0.0, TopologyRead(topo, None))
    per_batch = max(1, len(lines) // 600)
    for second in range(600):
        chunk = tuple(lines[second * per_batch:(second + 1) * per_batch])
        moving = replace(snap, elapsed=float(second), progress=second / 600)
        update = EngineUpdate(chunk, tuple(events[:1]), (), moving, 0, 0)
        rec.ingest(float(second), EngineBatch("h", update, None, board_of([NodeView("h", moving)], seq=second + 1)))
        rec.ingest(float(second), GpuRound(replace(gpus, time=1000.0 + second), frozenset({1}), (12, 0)))
    final = EngineUpdate((), (), (), snap, 0, 0)
    rec.ingest(600.0, EngineBatch("h", final, None, board_of([NodeView("h", snap)], seq=601)))  # the verdict
    ingest = time.perf_counter() - t0
    t1 = time.perf_counter()
    path = rec.write(final=True)
    wrote = time.perf_counter() - t1
    assert path is not None
    return len(raw), len(gzip.compress(raw)), path.stat().st_size, ingest, wrote


def main(argv: list[str] | None = None) -> int:
    from symmtui.bundle import format as fmt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--trials", type=int, default=15, help="wait trials of each kind (default 15)")
    args = ap.parse_args(argv)
    ensure_bytecode()
    ok = True
    with tempfile.TemporaryDirectory(prefix="symmtui-bench-bundle-") as d:
        tmp = Path(d)
        rec, off = wait_latency(args.trials, tmp)
        m_rec, m_off = statistics.median(rec), statistics.median(off)
        added = m_rec - m_off
        lat_ok = added <= ADDED_TARGET_S
        ok &= lat_ok
        print("| figure | target | measured | baseline |")
        print("|---|---|---|---|")
        print(f"| ready line -> `symmtui wait` exited, recording the bundle, median of {len(rec)} | "
              f"<= +{ADDED_TARGET_S * 1000:.0f} ms | {m_rec * 1000:.1f} ms (+{added * 1000:.1f} ms, "
              f"{'met' if lat_ok else 'NOT met'}) | `--no-record`: {m_off * 1000:.1f} ms |")
        raw, raw_gz, size, ingest, wrote = bringup_bundle(tmp)
        size_ok = size <= fmt.MAX_FILE_BYTES
        ok &= size_ok
        print(f"| bundle of a 10-minute TP8 bring-up (600 GPU rounds x 8 GPUs, {raw} B of log) | "
              f"<= {fmt.MAX_FILE_BYTES >> 20} MiB | {size / 1024:.1f} KiB ({'met' if size_ok else 'NOT met'}); "
              f"recording {ingest * 1000:.0f} ms, one write {wrote * 1000:.1f} ms | "
              f"the log gzipped alone: {raw_gz / 1024:.1f} KiB |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
