"""Stacks dump cost: every process of a tree at once (symmtui.stacks) vs py-spy run by hand, one by one."""

# `python -m bench.stacks` prints one table. Target: the 8 processes of a hung server's tree dumped in
# under 2 s, `symmtui stacks --pid` end to end (interpreter start included). The baseline, in the same
# run: `py-spy dump --pid P` for each process in turn, as people do it by hand. Exit 1 if the target is missed.

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_8_S = 2.0
RUNS = 3

BLOCKED = """
import sys, time
def blocked_in_a_collective():
    while True:
        time.sleep(0.2)
print("in", flush=True)
blocked_in_a_collective()
"""


def _start(n: int) -> list[subprocess.Popen[str]]:
    procs = [subprocess.Popen([sys.executable, "-c", BLOCKED], stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == "in\n"
    return procs


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def _median(f: object) -> float:
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        f()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _sequential(pyspy: str, pids: list[int]) -> None:
    for pid in pids:
        subprocess.run([pyspy, "dump", "--pid", str(pid), "--json"], capture_output=True, check=True)


def _hung_tree_cli() -> tuple[float, int]:
    """`symmtui stacks --pid` on the demo server's hang story (8 rank processes + the server)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with open(log, "wb") as out:
            server = subprocess.Popen([sys.executable, "-m", "symmtui.demo.server", "--speed", "1000", "--tp", "8",
                                       "--hang-rank", "5", "--port", "0"], stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while log.read_text().count("Init torch distributed ends.") < 7 and time.monotonic() < deadline:
                time.sleep(0.05)
            times = []
            groups = 0
            for _ in range(RUNS):
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "symmtui", "stacks", "--pid", str(server.pid), "--log",
                                       str(log), "--no-save"], capture_output=True, text=True, check=True)
                times.append(time.perf_counter() - t0)
                groups = sum(1 for ln in done.stdout.splitlines() if " in " in ln and "TP" in ln.split(" in ")[0])
            return statistics.median(times), groups
        finally:
            server.terminate()
            server.wait()


def main(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="python -m bench.stacks", description=__doc__).parse_args(argv)
    from symmtui.stacks.pyspy import dump_many, find_pyspy

    pyspy = find_pyspy()
    rows: list[tuple[str, str, str]] = []
    ok = True
    for n in (8, 64):
        procs = _start(n)
        try:
            pids = [p.pid for p in procs]
            items = [(pid, "") for pid in pids]
            par = _median(lambda items=items: dump_many(items, limit=30))
            got = dump_many(items, limit=30)
            read = sum(1 for d in got if d.status == "ok")
            seq = _median(lambda pids=pids: _sequential(pyspy, pids))
        finally:
            _stop(procs)
        rows.append((f"{n} processes, dump_many (parallel)", f"{par * 1000:.0f} ms", f"{read}/{n} read"))
        rows.append((f"{n} processes, py-spy one by one (baseline)", f"{seq * 1000:.0f} ms",
                     f"{seq / par:.1f}x the parallel time"))
    cli, groups = _hung_tree_cli()
    ok = cli < TARGET_8_S and groups == 2
    rows.append(("symmtui stacks --pid, hung tree of 8 ranks + server, end to end", f"{cli * 1000:.0f} ms",
                 f"target < {TARGET_8_S * 1000:.0f} ms; {groups} rank groups"))
    width = max(len(r[0]) for r in rows)
    print(f"median of {RUNS} runs each; py-spy {subprocess.run([pyspy, '--version'], capture_output=True, text=True).stdout.strip()}")
    print(f"{'what':<{width}}  {'wall':>8}  note")
    for what, wall, note in rows:
        print(f"{what:<{width}}  {wall:>8}  {note}")
    print("target met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
