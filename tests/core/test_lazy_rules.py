"""Rule regexes compile at their first search: the same judgements as the shipped catalogue checked in
full with every regex compiled up front, on every line of the corpus and fixture logs."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.bringup.scan import ScanReport, scan_file
from symmtui.judge.events import EventBuilder
from symmtui.judge.rules import Rule, RuleSet
from symmtui.logs.decode import strip_ansi
from symmtui.tables.catalogue import builtin_entries, builtin_files, parse_builtin

TESTS = Path(__file__).resolve().parents[1]
LOGS = sorted([*(TESTS / "corpus").glob("*/*.log"), *(TESTS / "fixtures").glob("*.log")])


def _checked_entries() -> tuple[Rule, ...]:
    """The shipped catalogue (its files and the engine files' entries) parsed with every check."""
    return parse_builtin(check_patterns=True)


@lru_cache(maxsize=1)
def _eager() -> RuleSet:
    """What a start did before: every pattern compiled while loading, and every regex of the set
    compiled with it by ``re.compile`` (not by LazyRegex: the reference does not share its code)."""
    rs = RuleSet(_checked_entries())
    for rx in rs.regexes():
        rx.search = re.compile(rx.pattern).search
    return rs


def test_the_shipped_catalogue_passes_every_check_and_loads_the_same_rules() -> None:
    assert _checked_entries() == builtin_entries() and len(builtin_entries()) > 80


def test_a_new_rule_set_compiles_nothing_and_a_line_compiles_only_the_rules_it_selects() -> None:
    rs = RuleSet()
    regexes = list(rs.regexes())
    assert len(regexes) > 100 and not any(rx.is_compiled for rx in regexes)
    m = rs.match("[2026-11-29 09:40:03] INFO:     The server is fired up and ready to roll!")
    assert m is not None and m.rule.kind.value == "ready"
    assert 0 < sum(rx.is_compiled for rx in regexes) < 10
    assert all(rx.is_compiled for rx in rs.compile_all().regexes())


def test_the_corpus_and_fixtures_are_there() -> None:
    assert len(LOGS) >= 40


@pytest.mark.parametrize("log", LOGS, ids=[f"{p.parent.name}/{p.name}" for p in LOGS])
def test_lazy_and_eager_rules_judge_every_line_and_the_log_alike(log: Path) -> None:
    lazy, eager = RuleSet(), _eager()
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        plain = strip_ansi(line)
        assert ([(m.rule, m.match.span(), m.match.groupdict()) for m in lazy.match_all(plain)]
                == [(m.rule, m.match.span(), m.match.groupdict()) for m in eager.match_all(plain)]), line
        a, b = lazy.classify(plain), eager.classify(plain)
        assert (a and (a.rule, a.match.span())) == (b and (b.rule, b.match.span())), line
    judged = [_judged(scan_file(log, rs)) for rs in (RuleSet(), eager)]
    assert judged[0] == judged[1]
    events = []
    for rs in (RuleSet(), eager):
        builder = EventBuilder(rs)
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        events.append([*(e for i, ln in enumerate(lines, 1) for e in builder.feed_plain(i, strip_ansi(ln))), *builder.flush()])
    assert events[0] == events[1]


def _judged(report: ScanReport) -> ScanReport:
    return replace(report, seconds=0.0)


def test_the_shipped_files_are_the_catalogue_package_resources() -> None:
    import importlib.resources as res

    want = sorted(f.name for f in res.files("symmtui.catalogue").iterdir() if f.name.endswith(".toml"))
    assert [name for name, _ in builtin_files()] == want and len(want) >= 5
