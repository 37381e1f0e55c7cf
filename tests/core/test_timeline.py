"""One timeline (issue 29, item 6): one clock per log that never goes back, no absurd duration, every figure wait
and scan print on the same clock, and scan and wait read bare CR, CRLF and LF line ends alike. The logs here are
constructed (labelled): a real fixture's lines with their line ends or stamps changed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from symmtui.bringup.scan import report_text, scan_file
from tests.core.engine_kit import KEYERROR_LOG, READY_LOG, env, symmtui_cmd

RETRACTION = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-2746-decode-retraction.log"


def _wait(log: Path) -> tuple[int, str]:
    r = subprocess.run(symmtui_cmd("wait", "--log", str(log), "--timeout", "20", "--no-record"),
                       capture_output=True, text=True, timeout=120, env=env())
    return r.returncode, r.stdout


@pytest.mark.parametrize("ends", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_scan_and_wait_read_any_line_ends_alike(tmp_path: Path, ends: bytes) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(KEYERROR_LOG.read_bytes().replace(b"\n", ends))
    rep = scan_file(log)
    code, out = _wait(log)
    assert rep.verdict == "crashed" and code == 1, out
    verdict = next(ln for ln in out.splitlines() if ln.startswith("CRASHED after"))
    assert rep.cause is not None and rep.cause.summary in verdict  # the same cause, whatever it is


def test_a_stamp_that_goes_back_makes_no_negative_duration(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-01-02 00:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
                   "[2026-01-02 00:00:05 TP0] Load weight begin.\n"
                   "[2026-01-01 00:00:00] The server is fired up and ready to roll!\n")
    rep = scan_file(log)
    assert rep.verdict == "ready" and all((s.duration() or 0) >= 0 for s in rep.phases)
    assert report_text(rep)[-1] == "verdict: READY 5.0 s after the first line"
    code, out = _wait(log)
    assert code == 0 and "came up 5.0 s after its first line" in out and "-" not in out.split("READY after")[1][:8]


def test_an_absurd_stamp_is_no_time(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
                   "[1970-01-01 00:00:00] The server is fired up and ready to roll!\n")
    rep = scan_file(log)
    assert rep.verdict == "ready" and report_text(rep)[-1] == "verdict: READY"
    code, out = _wait(log)
    assert code == 0 and not re.search(r"-\d", out)


def test_wait_says_every_figure_on_the_logs_clock(tmp_path: Path) -> None:
    """The READY fixture, a retraction flood whose stamps go back (sgl-project/sglang#2746's lines, repeated), then
    the KeyError fixture's crash: the span to the crash is the span to READY plus the time after READY."""
    crash = KEYERROR_LOG.read_text().splitlines()
    first = next(i for i, ln in enumerate(crash) if "hit an exception" in ln)
    log = tmp_path / "server.log"
    log.write_text(READY_LOG.read_text() + RETRACTION.read_text() * 50 + "\n".join(crash[first:]) + "\n")
    code, out = _wait(log)
    assert code == 1, out
    span = float(re.search(r"it crashed ([\d.]+) s after its first line", out).group(1))  # type: ignore[union-attr]
    after = float(re.search(r"it crashed ([\d.]+) s after READY", out).group(1))  # type: ignore[union-attr]
    ready = scan_file(READY_LOG)
    assert ready.phases[-1].log_start is not None and ready.first_ts is not None
    assert span == pytest.approx(ready.phases[-1].log_start - ready.first_ts + after)
    assert "--- first error" in out and "  | " in out.split("--- first error")[1].splitlines()[1]
