"""Which of a rule set's literals a line holds, in one Hyperscan call (the per-line prefilter of RuleSet.match).

A candidate line (one that holds some literal) is tried only against the rules whose literals it holds. Asking
each of ~140 literals ``k in line`` costs ~6 us a line; one Hyperscan block scan of the line, with a callback per
literal found, ~1 us. A flood of candidate lines (a CUDA-graph progress bar at 50k lines/s, every line a phase
marker) spends that per line on the engine's thread. Hyperscan's scratch space is per thread (the live engine
and the backfill judge with one rule set at once).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from symmtui.judge import hscache


class LiteralMask:
    """``mask(line)``: the OR of ``bits[i]`` over every literal ``i`` the line holds (overlapping ones too)."""

    def __init__(self, hyperscan: Any, literals: Sequence[str], bits: Sequence[int]) -> None:
        self._hs: Any = hyperscan
        self._bits = tuple(bits)
        # Hex escapes: every byte is a literal (no metacharacter survives); one report per literal a scan
        pats = [b"".join(b"\\x%02x" % c for c in lit.encode("utf-8")) for lit in literals]
        self._db: Any = hscache.database(hyperscan, pats, [hyperscan.HS_FLAG_SINGLEMATCH] * len(pats))
        self._local = threading.local()

    def mask(self, line: str) -> int:
        local = self._local
        scratch = getattr(local, "scratch", None)
        if scratch is None:
            scratch = local.scratch = self._hs.Scratch(self._db)
        acc = [0]
        bits = self._bits

        def found(i: int, _start: int, _end: int, _flags: int, _ctx: object) -> None:
            acc[0] |= bits[i]

        self._db.scan(line.encode("utf-8", "surrogatepass"), match_event_handler=found, scratch=scratch)
        return acc[0]


def literal_mask(literals: Sequence[str], bits: Sequence[int]) -> LiteralMask | None:
    """A LiteralMask, or None where Hyperscan is missing or refuses this CPU (the caller tests each literal)."""
    if not literals:
        return None
    try:
        import hyperscan  # hyperscan: optional and heavy; the mask is built on first use
    except ImportError:
        return None
    try:
        return LiteralMask(hyperscan, literals, bits)
    except hyperscan.error:  # a CPU Hyperscan does not support (it needs SSSE3): the plain loop, same mask
        return None
