"""The cause is the first fatal record of the process that died (issue 29, item 4): a warning never headlines, a
consequence yields to its cause wherever it was printed, and a wrapper shown alone says its cause is not in the log."""

from __future__ import annotations

from pathlib import Path

from symmtui.bringup.scan import scan_file
from symmtui.judge.diagnose import diagnose
from tests.core.engine_kit import FIXTURES, KEYERROR_LOG, ROOT

RETRACTION = FIXTURES / "sglang-2746-decode-retraction.log"  # sgl-project/sglang#2746


def test_sglangs_retraction_is_a_warning_never_a_crash() -> None:
    rep = scan_file(RETRACTION)
    assert rep.verdict == "ready" and rep.cause is None and rep.errors == ()
    (w,) = rep.warnings
    assert w.diagnosis == "sglang-decode-retraction" and w.count == 5 and w.ranks == frozenset({0, 2, 5, 6, 7})
    d = diagnose(w)
    assert d is not None and "not a crash" in d.action


def test_a_fatal_after_a_retraction_flood_is_the_cause_and_the_warning_stays_one(tmp_path: Path) -> None:
    """Constructed from real lines: the retraction excerpt repeated 200 times, then the KeyError fixture's crash."""
    crash = KEYERROR_LOG.read_text().splitlines()
    first = next(i for i, ln in enumerate(crash) if "hit an exception" in ln)
    log = tmp_path / "server.log"
    log.write_text(RETRACTION.read_text() * 200 + "\n".join(crash[first:]) + "\n")
    rep = scan_file(log)
    assert rep.verdict == "crashed" and rep.cause is not None
    assert rep.cause.summary == "KeyError: 12 at torch_symm_mem.py:83"
    assert [w.diagnosis for w in rep.warnings] == ["sglang-decode-retraction"] and rep.warnings[0].count == 1000


def test_a_childs_traceback_printed_after_the_parents_sigquit_is_the_cause(tmp_path: Path) -> None:
    """The KeyError fixture with its `Received sigquit` line moved above the scheduler's traceback (constructed:
    the parent's line flushed before the child's, as two processes on one terminal can)."""
    lines = KEYERROR_LOG.read_text().splitlines()
    quit_at = next(i for i, ln in enumerate(lines) if "Received sigquit" in ln)
    tb_at = next(i for i, ln in enumerate(lines) if "hit an exception" in ln)
    log = tmp_path / "server.log"
    log.write_text("\n".join([*lines[:tb_at], lines[quit_at], *lines[tb_at:quit_at], *lines[quit_at + 1:]]) + "\n")
    rep = scan_file(log)
    assert rep.cause is not None and rep.cause.summary.startswith("KeyError: 12")
    assert any(e.rule_id == "sglang-child-failed" for e in rep.errors)  # listed, as what followed


def test_a_wrapper_alone_says_its_cause_is_not_in_the_log() -> None:
    """vllm-project/vllm#29639 (tests/corpus/cases): only the API server's wrapper is in the log."""
    rep = scan_file(ROOT / "tests" / "corpus" / "cases" / "vllm-29639-wrapper-only-failed-core-procs.log")
    assert rep.cause is not None and "Engine core initialization failed" in rep.cause.summary
    d = diagnose(rep.cause)
    assert d is not None and "is named instead of this line when the log holds it" in d.action
    assert "above this line: that is the real cause" not in d.action


def test_classify_skips_an_entry_only_when_its_regex_could_not_match() -> None:
    """Every shipped entry's example (a line of a real log) and the corpus's exception lines classify as they would
    with every entry's regex tried in order: the keys that spare ``classify`` its compiling change no answer."""
    import re

    from symmtui.judge.rules import RuleSet, message_part

    rs = RuleSet()
    ordered = [r for r in rs.rules if r.diagnoses and r.scope != "exit"]

    def every_regex(message: str) -> str | None:
        for r in ordered:
            if re.search(r.pattern, message) and (not r.context or re.search(r.context, message)):
                return r.id
        return None

    messages = [message_part(r.example) for r in rs.rules if r.example]
    for log in sorted((ROOT / "tests" / "corpus" / "cases").glob("*.log")):
        messages += [message_part(ln) for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()
                     if re.search(r"\w(Error|Exception)\b|error|failed", ln)]
    assert len(messages) > 150
    for message in messages:
        m = rs.classify(message)
        assert (m.rule.id if m else None) == every_regex(message), message
