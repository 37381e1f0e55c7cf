"""`litscan`: Hyperscan's multi-literal search finds exactly the lines the pure-Python ByteScanner finds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symmtui.judge import litscan
from symmtui.judge.rules import ByteScanner, RuleSet

from .test_rules import EXAMPLES, ORDINARY

pytestmark = pytest.mark.skipif(not litscan.available(), reason="hyperscan has no wheel for this platform")

RULES = RuleSet().with_user(ready=[r"^\d+\s+ok$"])  # one rule with no literal: found by its regex
_fragments = st.sampled_from([lit for r in RuleSet().rules for lit in r.literals]
                             + ["Traceback", "\x00", "\x1b[0m", "é", "200 ok", "1 ok", "\t", " "])
_text = st.lists(st.one_of(_fragments, st.text(max_size=10)), max_size=6).map("".join)


_FINDERS: list[litscan.LineFinder] = []


def _both(buf: bytes, end: int) -> tuple[list[int], list[int]]:
    if not _FINDERS:  # built once (a Hyperscan compile, a RuleSet): the results do not depend on the sample
        _FINDERS.extend((litscan.finder(RULES, b""), ByteScanner(RULES, "\n".join(ORDINARY).encode())))
    fast, slow = _FINDERS
    assert isinstance(fast, litscan.HyperscanFinder)
    return fast.candidate_starts(buf, end), slow.candidate_starts(buf, end)


def test_examples_between_ordinary_lines() -> None:
    filler = "\n".join(ORDINARY) + "\n"
    buf = "".join(filler + line + "\n" for _, line in EXAMPLES).encode()
    fast, slow = _both(buf, len(buf))
    assert fast == slow and len(fast) >= len(EXAMPLES)


@settings(max_examples=200, deadline=None)
@given(st.lists(_text, min_size=1, max_size=20), st.integers(min_value=0, max_value=3))
def test_same_lines_as_the_byte_scanner(lines: list[str], drop: int) -> None:
    """Also on a prefix of the buffer (``end``, the chunk's last whole line): no hit beyond it counts."""
    clean = [ln.replace("\n", " ").replace("\r", " ") for ln in lines]
    buf = ("\n".join(clean) + "\n").encode("utf-8", "surrogatepass")
    end = len(buf)
    for _ in range(drop):
        end = buf.rfind(b"\n", 0, end - 1) + 1
    fast, slow = _both(buf, end)
    assert fast == slow
