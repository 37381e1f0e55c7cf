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


_NEEDLES = (b"server_args=ServerArgs(", b"vLLM API server version", b"LLM version: ", b"ab", b"b")
_LAST = (litscan.LastLiteral(_NEEDLES), litscan.LastLiteral(_NEEDLES, fast=False))


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.sampled_from([n.decode() for n in _NEEDLES]), st.text(max_size=8)), max_size=8),
       cut=st.tuples(st.integers(0, 200), st.integers(0, 200)))
def test_the_last_literal_in_a_window_of_a_mapped_file_is_rfinds(tmp_path_factory: pytest.TempPathFactory,
                                                                  parts: list[str], cut: tuple[int, int]) -> None:
    """One Hyperscan pass over a window of the mapped file gives the offset that ``mmap.rfind`` of each needle gives:
    the last needle lying wholly in ``[lo, hi)``, -1 for none."""
    import mmap

    data = "".join(parts).encode() or b"\n"
    path = tmp_path_factory.mktemp("last") / "log"
    path.write_bytes(data)
    lo, hi = sorted(min(c, len(data)) for c in cut)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), len(data), prot=mmap.PROT_READ) as mm:
        want = max((mm.rfind(n, lo, hi) for n in _NEEDLES), default=-1)
        assert [finder.last(mm, lo, hi) for finder in _LAST] == [want, want]
