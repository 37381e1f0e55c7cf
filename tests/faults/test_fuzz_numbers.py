"""Absurd numbers in log lines crash nothing (a property, hypothesis): real line shapes (every line with a digit in
tests/fixtures and tests/corpus/cases: shard counts and tqdm rates, timestamps, sizes, percentages, memory
figures, ranks, ports) with their numbers replaced by absurd ones (400 and 5,000 digits, 1e-6, 1e400, inf, nan,
zero, negative, 2**64) are judged by `wait` and `scan` and shown by the dashboard (a Pilot app over a real
Session following the file) without a traceback or an internal error; absurd figures read as unknown.

Constructed input (labelled so): the lines are real shapes with hostile numbers, not lines any server printed.
Derandomized; ``SYMMTUI_FUZZ_EXAMPLES=60`` for a longer run.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from symmtui.cli import main
from symmtui.ui.app import SymmApp
from tests.faults.hostile_kit import EXIT_CODES
from tests.handclock import LeapClock
from tests.ui.kit import heartbeats, text, wait_for, watched

TESTS = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("SYMMTUI_FUZZ_EXAMPLES", "25"))
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _shapes() -> list[str]:
    """Every distinct line with a digit in the fixtures and the corpus's logs (sorted: a derandomized draw)."""
    found: set[str] = set()
    for path in [*(TESTS / "fixtures").glob("*.log"), *(TESTS / "corpus" / "cases").glob("*.log")]:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if NUMBER.search(line) and len(line) < 2000:
                found.add(line)
    return sorted(found)


SHAPES = _shapes()
_READY = (TESTS / "fixtures" / "sglang-tp8-ready.log").read_text().splitlines()
START = _READY[:next(i for i, ln in enumerate(_READY) if "Load weight begin" in ln) + 1]
"""A real bring-up up to its weight loading: after it, a shard line's counts and rate make the live ETA."""
ABSURD = st.one_of(
    st.sampled_from(["9" * 400, "1" + "0" * 5000, "0", "00", "-1", "-0", "1e-6", "0.000001", "1e400", "1e-400", "inf",
                     "nan", "NaN", "18446744073709551616", "99999999999999999999", "1.7976931348623157e309",
                     "340282366920938463463374607431768211456", "0.0", "4294967295", "2147483648", "1_000"]),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
COUNTS = st.one_of(st.sampled_from(["37", "83", "0", "9" * 400, "1" + "0" * 5000, "18446744073709551616", "9" * 18]),
                   ABSURD)
RATES = ["2.10", "5.18", "0.000001", "1e-6", "1e400", "0", "0.00", "inf", "nan", "9" * 400, "99999999999999999999"]
PROGRESS = "Loading safetensors checkpoint shards:  37% Completed | {i}/{n} [00:10<00:12,  {rate}]"


@st.composite
def hostile_lines(draw: st.DrawFn) -> list[str]:
    """A few real shapes, each number in them replaced (some kept), after a real start of a bring-up or not, and
    last a tqdm shard line whose counts and rate are absurd or not (the live ETA reads them)."""
    lines = list(START) if draw(st.booleans()) else []
    for shape in draw(st.lists(st.sampled_from(SHAPES), min_size=0 if lines else 1, max_size=12)):
        lines.append(NUMBER.sub(lambda m: draw(st.one_of(st.just(m.group(0)), ABSURD)), shape))
    if draw(st.booleans()):
        i, n = draw(COUNTS), draw(COUNTS)
        rate = draw(st.sampled_from(RATES)) + draw(st.sampled_from(["it/s", "s/it"]))
        lines.append(PROGRESS.format(i=i, n=n, rate=rate))
    return lines


SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


@contextlib.contextmanager
def _log(lines: list[str]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="symmtui-numbers-") as tmp:
        log = Path(tmp) / "server.log"
        log.write_text("".join(f"{ln}\n" for ln in lines), encoding="utf-8")
        yield log


def _verb(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    text_ = err.getvalue()
    assert code in EXIT_CODES, (code, text_[-2000:])
    assert "Traceback" not in text_ and "internal error" not in text_, text_[-2000:]
    return code, out.getvalue(), text_


@SETTINGS
@given(lines=hostile_lines())
def test_wait_and_scan_judge_absurd_numbers_without_a_traceback(lines: list[str]) -> None:
    with _log(lines) as log:
        code, out, _ = _verb("wait", "--log", str(log), "--timeout", "0.3", "--no-record")
        assert code in (0, 1, 124) and out
        event(f"wait exit {code}")
        for argv in (("scan", str(log)), ("scan", "--json", str(log))):
            code, out, _ = _verb(*argv)
            assert code in (0, 1, 3) and out
            assert "277777777767500" not in out


@settings(SETTINGS, max_examples=max(4, EXAMPLES // 2))
@given(lines=hostile_lines())
async def test_the_dashboard_shows_absurd_numbers_without_a_traceback(lines: list[str]) -> None:
    with _log(lines) as log:
        clock = LeapClock()
        session = watched(log, clock=clock)
        app = SymmApp(session)
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                last = lines[-1][:30].strip()
                await wait_for(pilot, lambda: not last or last.split()[0] in text(app), "the last line shown")
                await heartbeats(pilot, clock)  # the Board (the ETA from the last lines' rate, the clock) shown again
                shown = text(app)
                assert "277777777767500" not in shown
            assert app.return_code in (None, 0)
        finally:
            session.close()
