"""Start-up cost of a headless `symmtui` process: CPU-seconds and wall per verb start.

`python -m bench.startup` (about a minute); `--against REV` adds the same rows for a git revision of
this repository (exported with `git archive` into a temporary folder, its bytecode compiled, run from
there), so an earlier commit's figures come from the same run. Rows, median of N runs each, trials
interleaved:
  - baselines: `python -c pass` and `python -c "import symmtui.cli"`;
  - `symmtui --help`;
  - `symmtui stop --config MISSING.toml` (the error path: one line, exit 2);
  - `symmtui scan` of the fixture log (tests/fixtures/sglang-tp8-symm-mem-keyerror.log);
  - `symmtui wait --log SMALL.log --timeout 1 --no-record` on a finished small log (READY at once).
Target (with ``--against`` a revision before the start-up work, e.g. 3003f68): a headless verb's
start, the stop error path and the small-log wait, at most half of that revision's CPU in the same run.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
TARGETS = ("stop (error path)", "wait (small finished log)")  # <= TARGET_RATIO x the --against revision's CPU
TARGET_RATIO = 0.5


@dataclass(frozen=True)
class Row:
    """One command to time: a name, its argv after the interpreter, the exit code it must give."""

    name: str
    argv: tuple[str, ...]
    exit_code: int


def rows(tmp: Path) -> list[Row]:
    """The rows, with their input files under ``tmp``."""
    small = tmp / "small.log"
    shutil.copyfile(FIXTURES / "sglang-tp8-ready.log", small)
    return [
        Row("python -c pass", ("-c", "pass"), 0),
        Row('python -c "import symmtui.cli"', ("-c", "import symmtui.cli"), 0),
        Row("--help", ("-m", "symmtui", "--help"), 0),
        Row("stop (error path)", ("-m", "symmtui", "stop", "--config", str(tmp / "missing.toml")), 2),
        Row("scan (fixture log)", ("-m", "symmtui", "scan", str(FIXTURES / "sglang-tp8-symm-mem-keyerror.log")), 1),
        Row("wait (small finished log)",
            ("-m", "symmtui", "wait", "--log", str(small), "--timeout", "1", "--no-record"), 0),
    ]


def run_once(row: Row, tree: Path) -> tuple[float, float]:
    """(CPU-seconds of the child, user + system; wall seconds) of one run of ``row`` from ``tree``."""
    # The environment as these machines have it (PYTHONDONTWRITEBYTECODE set): the bytecode is compiled
    # beforehand, as an install has it; what a start writes besides (the catalogue cache) must cope.
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *row.argv], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != row.exit_code:
        raise SystemExit(f"{row.name}: exit {proc.returncode}, expected {row.exit_code}: "
                         f"{proc.stderr.decode(errors='replace')[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def export(rev: str, dest: Path) -> Path:
    """Revision ``rev`` of this repository as plain files under ``dest`` (no worktree, no stash)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev],
                             capture_output=True, check=True).stdout
    dest.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--trials", type=int, default=15, help="runs per row (default 15)")
    ap.add_argument("--against", metavar="REV", help="also time this git revision (e.g. a commit before a change)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp_name:
        tmp = Path(tmp_name)
        trees = {"this tree": REPO}
        if args.against:
            trees[args.against] = export(args.against, tmp / "against")
        for tree in trees.values():
            compileall.compile_dir(str(tree / "symmtui"), quiet=1)  # as pip leaves an installed package
        table = rows(tmp)
        cpu: dict[tuple[str, str], list[float]] = {}
        wall: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.trials):
            for row in table:
                for label, tree in trees.items():
                    c, w = run_once(row, tree)
                    cpu.setdefault((row.name, label), []).append(c)
                    wall.setdefault((row.name, label), []).append(w)
    print(f"median of {args.trials} runs each, trials interleaved; CPU = user + system of the child")
    header = "| start | target | CPU s | wall s |"
    sep = "|---|---|---|---|"
    if args.against:
        header += f" CPU s at {args.against} | wall s at {args.against} | CPU ratio |"
        sep += "---|---|---|"
    print(header)
    print(sep)
    missed = []
    for row in table:
        mine = statistics.median(cpu[(row.name, "this tree")])
        line = f"| {row.name} | {{target}} | {mine:.3f} | {statistics.median(wall[(row.name, 'this tree')]):.3f} |"
        target = "-"
        if args.against:
            theirs = statistics.median(cpu[(row.name, args.against)])
            line += f" {theirs:.3f} | {statistics.median(wall[(row.name, args.against)]):.3f} | {mine / theirs:.2f} |"
            if row.name in TARGETS:
                target = f"<= {TARGET_RATIO:g}x"
                if mine > TARGET_RATIO * theirs:
                    missed.append(row.name)
        print(line.format(target=target))
    if missed:
        print(f"missed the target: {', '.join(missed)}")
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
