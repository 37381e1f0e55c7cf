"""Score symmtui on the corpus of real server logs: verdicts, root causes, diagnoses (``python -m bench.corpus``).

Each case is ``tests/corpus/{cases,holdout}/<id>.log`` with ``<id>.toml`` (its label: expected verdict, a
substring of the root-cause line, the catalogue entry it should hit). For every case this runs ``scan`` in
process (the same JSON as ``symmtui scan --json``) and ``symmtui wait --log PATH --timeout 3 --stall 0`` as a
child process on the finished file, then prints three figures for the tuned set (cases/) and the held-out set
(holdout/) apart: verdicts right, root causes named, diagnoses right; then the same figures per engine within each
set. ``--verbose`` lists the tuned set's misses (``--verbose-holdout`` the held-out ones too), with the
``known_miss`` reason a tuned label gives for a case the engine does not get yet.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
SETS = ("cases", "holdout")
WAIT_EXIT = {0: "ready", 1: "crashed", 124: "none"}
WAIT_TIMEOUT_S = 3


@dataclass(frozen=True)
class Case:
    """One labelled log."""

    set_name: str
    case_id: str
    log: Path
    engine: str
    verdict: str
    root_cause: str
    entry: str
    source: str
    known_miss: str = ""  # tuned cases only: why the engine does not get this case yet (the engines helper removes it)


@dataclass
class Outcome:
    """What symmtui said about one case, and which of the three checks it passed."""

    case: Case
    scan_verdict: str
    wait_verdict: str
    cause_text: str
    diagnosis_ids: list[str]
    scan_ok: bool = False
    wait_ok: bool = False
    root_ok: bool = False
    diag_ok: bool = False
    notes: list[str] = field(default_factory=list)


def load_cases(root: Path = CORPUS) -> list[Case]:
    """Every case of both sets, sorted by set then id."""
    out: list[Case] = []
    for set_name in SETS:
        d = root / set_name
        if not d.is_dir():
            continue
        for toml_path in sorted(d.glob("*.toml")):
            with toml_path.open("rb") as fh:
                label = tomllib.load(fh)
            out.append(Case(set_name=set_name, case_id=toml_path.stem, log=toml_path.with_suffix(".log"),
                            engine=str(label["engine"]), verdict=str(label["verdict"]),
                            root_cause=str(label.get("root_cause", "")), entry=str(label.get("entry", "")),
                            source=str(label["source"]), known_miss=str(label.get("known_miss", ""))))
    return out


def _diagnosis_ids(cause: dict[str, Any] | None) -> list[str]:
    """The catalogue ids the cause claims: diagnosis.id / diagnosis.entry, else the rule id."""
    if not cause:
        return []
    ids: list[str] = []
    diag = cause.get("diagnosis")
    if isinstance(diag, dict):
        for key in ("id", "entry"):
            value = diag.get(key)
            if isinstance(value, str) and value:
                ids.append(value)
    rule = cause.get("rule")
    if isinstance(rule, str) and rule:
        ids.append(rule)
    return ids


def _cause_text(cause: dict[str, Any] | None, lines: list[str]) -> str:
    """The text of the cause line (by its number), its summary and its block, joined for substring checks."""
    if not cause:
        return ""
    parts: list[str] = []
    line_no = cause.get("line")
    if isinstance(line_no, int) and 1 <= line_no <= len(lines):
        parts.append(lines[line_no - 1])
    elif isinstance(line_no, str):
        parts.append(line_no)
    for key in ("summary", "headline"):
        value = cause.get(key)
        if isinstance(value, str):
            parts.append(value)
    block = cause.get("block")
    if isinstance(block, list):
        parts.extend(str(b) for b in block)
    return "\n".join(parts)


def wait_args(log: Path, timeout: float) -> list[str]:
    """`symmtui wait`'s arguments for a finished file: no stall (a finished log is silent), no bundle (the
    corpus is read in place: nothing is written beside its logs)."""
    return ["wait", "--log", str(log), "--timeout", str(timeout), "--stall", "0", "--no-record"]


def read_to_the_end(output: str, log: Path) -> bool:
    """Whether `symmtui wait`'s TIMED OUT block (its ``last lines:``) ends with the log's own last lines: then it
    read the whole finished file before its timeout. (A block still open at the file's end, such as a traceback,
    is judged only after the engine's QUIET_FLUSH: a timeout shorter than that may hide its verdict.)"""
    from symmtui.clitext import visible

    printed = output.splitlines()
    if "  last lines:" not in printed:
        return False
    at = len(printed) - printed[::-1].index("  last lines:")
    shown = [text.strip() for text in printed[at:]]
    lines = [visible(text).strip() for text in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return bool(shown) and len(shown) <= len(lines) and lines[-len(shown):] == shown


def run_wait(log: Path, timeout: float = WAIT_TIMEOUT_S) -> str:
    """`symmtui wait` on a finished file: its exit code read as a verdict (a log with neither: after ``timeout``)."""
    cmd = [sys.executable, "-m", "symmtui", *wait_args(log, timeout)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60, check=False)
    return WAIT_EXIT.get(proc.returncode, f"exit {proc.returncode}")


def judge(case: Case, wait_timeout: float = WAIT_TIMEOUT_S,
          wait: Callable[[Path, float], str] = run_wait) -> Outcome:
    """Scan and wait on one case and compare with its label (``wait``: how `symmtui wait` is run)."""
    from symmtui.bringup.scan import report_json, scan_file

    rep = report_json(scan_file(case.log))
    cause = rep.get("cause")
    lines = case.log.read_text(encoding="utf-8", errors="replace").splitlines()
    out = Outcome(case=case, scan_verdict=str(rep.get("verdict")), wait_verdict=wait(case.log, wait_timeout),
                  cause_text=_cause_text(cause, lines), diagnosis_ids=_diagnosis_ids(cause))
    out.scan_ok = out.scan_verdict == case.verdict
    out.wait_ok = out.wait_verdict == case.verdict
    if case.root_cause:
        out.root_ok = case.root_cause in out.cause_text
    else:  # no root cause expected (ready / not yet): right when scan blames nothing
        out.root_ok = cause is None or out.scan_verdict != "crashed"
    if case.entry:
        out.diag_ok = case.entry in out.diagnosis_ids
    else:
        out.diag_ok = out.scan_verdict != "crashed"
    return out


HEADER = f"{'cases':>5}  {'scan verd':>9}  {'wait verd':>9}  {'root causes':>11}  {'diagnoses':>9}"


def _row(name: str, outs: list[Outcome], width: int = 10) -> str:
    n = len(outs)

    def frac(k: int) -> str:
        return f"{k}/{n}" if n else "-"

    return (f"{name:<{width}} {n:>5}  {frac(sum(o.scan_ok for o in outs)):>9}  {frac(sum(o.wait_ok for o in outs)):>9}"
            f"  {frac(sum(o.root_ok for o in outs)):>11}  {frac(sum(o.diag_ok for o in outs)):>9}")


def engine_rows(outs: list[Outcome]) -> list[str]:
    """The figures per engine within each set (a held-out set's rows are counts too): one row per (engine, set)."""
    rows = [f"{'engine':<10} {'set':<8} {HEADER}"]
    for engine in sorted({o.case.engine for o in outs}):
        for set_name in SETS:
            mine = [o for o in outs if o.case.engine == engine and o.case.set_name == set_name]
            if mine:
                rows.append(_row(f"{engine:<10} {set_name}", mine, width=19))
    return rows


def _miss_lines(o: Outcome) -> list[str]:
    c = o.case
    out = [f"  {c.set_name}/{c.case_id} ({c.source})" + (f"  known miss: {c.known_miss}" if c.known_miss else "")]
    if not o.scan_ok or not o.wait_ok:
        out.append(f"    verdict: expected {c.verdict}, scan {o.scan_verdict}, wait {o.wait_verdict}")
    if not o.root_ok:
        got = o.cause_text.splitlines()[0][:140] if o.cause_text else "(no cause)"
        out.append(f"    root cause: expected {c.root_cause!r}, got {got!r}" if c.root_cause
                   else f"    root cause: expected none, got {got!r}")
    if not o.diag_ok:
        out.append(f"    diagnosis: expected {c.entry or '(none)'!r}, got {o.diagnosis_ids or '(none)'}")
    return out


def main(argv: list[str]) -> int:
    """Print the table (and the misses with --verbose); exit 0 (the figures are a measurement, not a gate)."""
    ap = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", "-v", action="store_true", help="list each failing tuned case, expected vs got")
    ap.add_argument("--verbose-holdout", action="store_true",
                    help="also list held-out misses (don't, while tuning: it would leak the held-out set)")
    ap.add_argument("--json", metavar="FILE", help="also write every outcome to FILE as JSON")
    ap.add_argument("--jobs", type=int, default=4, help="cases judged at once (wait sleeps up to 3 s each)")
    args = ap.parse_args(argv)
    cases = load_cases()
    if not cases:
        print(f"no cases under {CORPUS}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outs = list(pool.map(judge, cases))
    took = time.perf_counter() - t0
    print(f"corpus: {len(cases)} real logs from public issues ({CORPUS.name}/cases tuned on, holdout not); "
          f"wait --timeout {WAIT_TIMEOUT_S} --stall 0; {took:.1f} s")
    print(f"{'set':<10} {HEADER}")
    by_set = {s: [o for o in outs if o.case.set_name == s] for s in SETS}
    for s in SETS:
        print(_row(s, by_set[s]))
    print(_row("all", outs))
    print()
    print("\n".join(engine_rows(outs)))
    if args.verbose:
        shown = SETS if args.verbose_holdout else ("cases",)
        misses = [o for o in outs if o.case.set_name in shown
                  and not (o.scan_ok and o.wait_ok and o.root_ok and o.diag_ok)]
        print(f"\nmisses ({len(misses)} cases):")
        for o in misses:
            print("\n".join(_miss_lines(o)))
    if args.json:
        Path(args.json).write_text(json.dumps([
            {"set": o.case.set_name, "id": o.case.case_id, "engine": o.case.engine, "expected": o.case.verdict,
             "scan": o.scan_verdict,
             "wait": o.wait_verdict, "root_ok": o.root_ok, "diag_ok": o.diag_ok, "diagnosis": o.diagnosis_ids}
            for o in outs], indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
