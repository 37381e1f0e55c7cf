"""Every labelled real log of the corpus (tuned cases and the held-out set): scan and wait give its verdict,
name its root cause and hit its catalogue entry (the same judge as ``python -m bench.corpus``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.corpus import WAIT_EXIT, Case, judge, load_cases, wait_args
from symmtui import cli

CASES = load_cases()


def _wait_here(log: Path, timeout: float) -> str:
    """`symmtui wait` through the CLI's entry point (what `python -m symmtui` runs) in this process: its exit
    code read as a verdict, without starting a Python per case (``python -m bench.corpus`` starts one)."""
    code = cli.main(wait_args(log, timeout))
    return WAIT_EXIT.get(code, f"exit {code}")


def test_the_corpus_is_there() -> None:
    assert len(CASES) >= 40 and {c.set_name for c in CASES} == {"cases", "holdout"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.set_name}/{c.case_id}" for c in CASES])
def test_case(case: Case) -> None:
    out = judge(case, wait_timeout=1.5, wait=_wait_here)  # a finished log: no verdict needs 3 s
    assert out.scan_ok, f"scan said {out.scan_verdict}, the label says {case.verdict} ({case.source})"
    assert out.wait_ok, f"wait said {out.wait_verdict}, the label says {case.verdict} ({case.source})"
    assert out.root_ok, f"root cause {case.root_cause!r} not named: {out.cause_text[:300]!r} ({case.source})"
    assert out.diag_ok, f"diagnosis {case.entry!r} expected, got {out.diagnosis_ids} ({case.source})"
