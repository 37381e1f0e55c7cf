"""On a mixed host, check the capabilities other than the patched one: each rank reads the tables with its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from msgspec.structs import replace

from symmtui.patch.capability import Capability, KeyKind, key_text
from symmtui.patch.engine import check
from symmtui.patch.report import CheckReport

FINE = ("present", "not-applicable", "applied")


def other_caveats(report: CheckReport, others: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    """One caveat per other capability on this host whose key the same install's tables lack."""
    out: list[str] = []
    kind: KeyKind = "str" if isinstance(report.key, str) else "int"
    for other in others:
        cap = Capability.of(other)
        if cap.key(kind) == report.key:
            continue  # the same table key (SGLang keys by major alone): the report already covers it
        theirs = check(Path(report.root), report.package, cap)  # the same install, found again by its root
        if theirs.state in FINE:
            continue
        out.append(
            f"This host also has GPUs of capability {cap}: their ranks look up key {key_text(theirs.key)}, "
            f"which these tables lack too ({theirs.summary}); check it with symmtui patch check --capability {cap}."
        )
    return tuple(out)


def with_others(report: CheckReport, others: Sequence[tuple[int, int]]) -> CheckReport:
    """``report`` with :func:`other_caveats` added to its caveats (unchanged when there are none)."""
    extra = other_caveats(report, others) if others else ()
    return replace(report, caveats=report.caveats + extra) if extra else report
