"""`scan`: verdicts and causes of the samples, phases with times, JSON shape, odd bytes, chunk and worker invariance."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from symmtui.bringup.scan import board, report_json, report_text, scan_file
from symmtui.verbs.printer import verdict_lines

from .engine_kit import KEYERROR_LOG, READY_LOG, env, symmtui_cmd


def test_keyerror_sample() -> None:
    rep = scan_file(KEYERROR_LOG)
    assert rep.verdict == "crashed" and rep.exit_code == 1 and rep.lines == 122
    assert rep.cause is not None and rep.cause.headline() == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)"
    assert rep.cause.line_no == 10
    assert [e.rule_id for e in rep.errors] == ["traceback", "sglang-child-failed"]
    assert rep.duration == 15.0


def test_ready_sample_phases_and_times() -> None:
    rep = scan_file(READY_LOG)
    assert rep.verdict == "ready" and rep.exit_code == 0 and rep.lines == 166
    durations = {p.name: p.duration() for p in rep.phases}
    assert durations["loading weights"] == 430.0  # 09:40:13 -> 09:47:23
    assert durations["capturing CUDA graphs"] == 32.0
    assert [p.name for p in rep.phases][0] == "launching" and rep.phases[-1].name == "ready"
    text = "\n".join(report_text(rep))
    assert "loading weights" in text and "7m10s" in text and "verdict: READY 8m01s after the first line" in text


def test_json_shape() -> None:
    doc = report_json(scan_file(KEYERROR_LOG))
    assert set(doc) == {"path", "bytes", "lines", "first_time", "last_time", "duration_s", "runs", "verdict", "cause",
                        "phases", "last_phase", "progress", "errors", "warnings", "scan_seconds"}
    cause = doc["cause"]
    assert cause["headline"] == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)"
    assert cause["ranks"] == list(range(8)) and cause["count"] == 8 and cause["line"] == 10
    assert cause["diagnosis"]["intent"] == "patch"
    assert doc["first_time"] == "2026-11-29T09:40:03Z"
    json.dumps(doc)


def test_cli_json_and_exit_code() -> None:
    r = subprocess.run(symmtui_cmd("scan", str(READY_LOG), "--json"), capture_output=True, text=True,
                       timeout=60, env=env())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "ready"


def test_no_verdict(tmp_path: Path) -> None:
    log = tmp_path / "cut.log"
    text = READY_LOG.read_text()
    log.write_text(text[: text.index("Loading safetensors checkpoint shards:  50%")])
    rep = scan_file(log)
    assert rep.verdict == "none" and rep.exit_code == 3
    assert rep.last_phase == "loading weights" and rep.progress == (41, 83)
    assert "verdict: NONE" in "\n".join(report_text(rep))


def test_odd_bytes_do_not_break_it(tmp_path: Path) -> None:
    log = tmp_path / "odd.log"
    data = (
        b"\xff\xfe invalid utf-8 \x00 with NUL\n"
        b"\x1b[32mLoading safetensors checkpoint shards:   0% | 0/4 [00:00<?, ?it/s]"
        b"\rLoading safetensors checkpoint shards:  50% | 2/4 [00:01<00:01]\x1b[0m\n"
        + b"x" * (3 << 20) + b" Killed\n"  # a 3 MB line: judged by its head only
        + b"\x1b[31mKeyError\x1b[0m: 7\n"
        + b"Segmentation fault (core dumped)"  # no final newline
    )
    log.write_bytes(data)
    rep = scan_file(log, chunk_size=1 << 20)
    assert rep.lines == 5
    assert rep.progress == (2, 4)
    rules = [e.rule_id for e in rep.errors]
    assert "killed" not in rules  # beyond the 1 MiB head of the long line
    assert rules == ["python-exception", "native-crash"] and rep.errors[1].line_no == 5
    assert rep.verdict == "crashed" and rep.cause is not None and rep.cause.summary == "KeyError: 7"


def _big_log(tmp_path: Path) -> Path:
    log = tmp_path / "big.log"
    filler = "".join(
        f"[2026-11-29 10:00:{i % 60:02d} TP{i % 8}] Decode batch. #running-req: {i}, #token: 1, cuda graph: True\n"
        for i in range(3000)
    )
    parts = [READY_LOG.read_text().replace("The server is fired up", "The server is nearly up"), filler * 10,
             KEYERROR_LOG.read_text(), filler * 10,
             "[2026-11-29 11:00:00 TP2] TorchSymmMemCommunicator: Device capability 12 not supported\n", filler]
    log.write_text("".join(parts))
    return log


@pytest.fixture(scope="module")
def big_log_and_ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The big log and its one-process, one-chunk report: written and scanned once for the three cases."""
    log = _big_log(tmp_path_factory.mktemp("big"))
    ref = report_json(scan_file(log, chunk_size=1 << 23, workers=1))
    ref.pop("scan_seconds")
    return log, ref


@pytest.mark.parametrize(("chunk", "fast"), [(4096, True), (65536, True), (1 << 23, True), (65536, False)])
def test_chunk_size_and_workers_do_not_change_the_result(big_log_and_ref: tuple[Path, dict[str, Any]],
                                                         chunk: int, fast: bool) -> None:
    log, ref = big_log_and_ref
    got = report_json(scan_file(log, chunk_size=chunk, workers=3, fast=fast))
    got.pop("scan_seconds")
    assert got == ref
    assert ref["lines"] == sum(1 for _ in log.open("rb"))
    assert ref["cause"]["line"] == 166 + 30000 + 10
    assert ref["warnings"][0]["ranks"] == [2]


def test_traceback_is_grouped_across_a_chunk_boundary(tmp_path: Path) -> None:
    log = tmp_path / "tb.log"
    log.write_text("x\n" * 1000 + KEYERROR_LOG.read_text())
    for chunk in (64, 1000, 2003, 4096):
        rep = scan_file(log, chunk_size=chunk, workers=1)
        assert rep.cause is not None and rep.cause.count == 8, chunk
        assert len(rep.cause.block) == 13


@pytest.mark.parametrize(("cpus", "load", "size", "want"),
                         [(8, 0.0, 1 << 30, 8), (8, 7.6, 1 << 30, 2), (2, 5.0, 1 << 30, 2), (1, 0.0, 1 << 30, 1),
                          (16, 4.0, 1 << 30, 12), (16, 0.0, 100 << 20, 4), (8, 0.0, 1 << 20, 1)])
def test_worker_count_follows_idle_cores(monkeypatch: pytest.MonkeyPatch, cpus: int, load: float, size: int,
                                         want: int) -> None:
    from symmtui.bringup import scan

    monkeypatch.setattr(scan.os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    monkeypatch.setattr(scan.os, "getloadavg", lambda: (load, load, load))
    assert scan._workers(size) == want


def test_appended_launches_are_judged_by_the_last_one(tmp_path: Path) -> None:
    log = tmp_path / "appended.log"
    log.write_text(READY_LOG.read_text() + KEYERROR_LOG.read_text())
    rep = scan_file(log)
    assert rep.runs == 2 and rep.verdict == "crashed" and rep.cause is not None and rep.cause.count == 8
    log.write_text(KEYERROR_LOG.read_text() + READY_LOG.read_text())
    rep = scan_file(log)
    assert rep.runs == 2 and rep.verdict == "ready" and rep.errors == ()
    assert report_json(rep)["runs"] == 2


@pytest.mark.parametrize("at_line", [10, 11, 16, 22])  # the header, the first frame, a middle frame, the exception
def test_worker_boundary_inside_a_traceback(tmp_path: Path, at_line: int) -> None:
    """Two processes split the file in the middle of the first rank's traceback: it is still one
    block, merged with the other 7 ranks, with the same line numbers as one process gives."""
    from symmtui.bringup.scan import _split_ranges

    sample = KEYERROR_LOG.read_bytes()
    head = b"[2026-11-29 09:40:00] filler\n" * 3000
    inside = len(head) + sum(len(ln) for ln in sample.splitlines(keepends=True)[: at_line - 1]) + 3
    tail_len = 2 * inside - len(head) - len(sample)  # the middle of the file falls at ``inside``
    log = tmp_path / "split.log"
    log.write_bytes(head + sample + b"[2026-11-29 09:41:00] after\n" * (tail_len // 28 + 1))
    with log.open("rb") as fh:
        cut = _split_ranges(fh.fileno(), log.stat().st_size, 2)[1][0]
    assert inside - 3 < cut <= inside - 3 + len(sample.splitlines(keepends=True)[at_line - 1])  # the premise
    one = report_json(scan_file(log, workers=1))
    two = report_json(scan_file(log, workers=2, chunk_size=4096))
    for doc in (one, two):
        doc.pop("scan_seconds")
    assert two == one
    cause = two["cause"]
    assert cause["headline"] == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)" and cause["line"] == 3000 + 10
    assert len(cause["block"]) == 13 and two["lines"] == log.read_bytes().count(b"\n")


def test_scan_judges_odd_lines_as_the_follower_does(tmp_path: Path) -> None:
    """One decoding for both paths: an OSC hyperlink around the error, a CR followed by a NUL hole
    (copytruncate) and bold ANSI give the same events from `scan` as from the live follower."""
    from symmtui.judge.events import EventBuilder
    from symmtui.judge.rules import Kind
    from symmtui.logs.follow import iter_lines

    log = tmp_path / "odd.log"
    log.write_bytes(
        b"\x1b]8;;file:///x.py\x07KeyError: 12\x1b]8;;\x07\n"
        b"Segmentation fault\r\x00\x00\x00\n"
        b"\x1b[1mFatal Python error\x1b[0m: Aborted\n"
    )
    builder = EventBuilder()
    live = [e for batch in iter_lines(log) for ln in batch for e in builder.feed(ln)] + builder.flush()
    want = [(e.rule_id, e.line_no, e.summary) for e in live if e.kind is Kind.CRASH]
    assert [r for r, _, _ in want] == ["python-exception", "native-crash", "native-crash"]
    assert [(e.rule_id, e.line_no, e.summary) for e in scan_file(log).errors] == want


def test_parallel_scan_equals_sequential_on_a_written_log_with_crashes_at_the_cuts(tmp_path: Path) -> None:
    """A separate writer process builds a 256 KB log: tracebacks of 8 ranks between serving lines, over
    and over; for 2, 5 and 8 processes a cut falls inside one; the reports are identical."""
    import json
    import subprocess
    import sys

    from symmtui.bringup.scan import _split_ranges

    unit = tmp_path / "unit.log"  # lines of the fixtures: serving lines, then the 8 ranks' tracebacks
    ready = READY_LOG.read_bytes().splitlines(keepends=True)
    crash = KEYERROR_LOG.read_bytes().splitlines(keepends=True)
    unit.write_bytes(b"".join(ready[162:165]) * 40 + b"".join(crash[9:121]))
    log = tmp_path / "server.log"
    writer = Path(__file__).resolve().parent.parent / "fixtures" / "big_log_writer.py"
    r = subprocess.run([sys.executable, str(writer), str(log), f"file:{READY_LOG}",
                        f"fill:{unit}:1:232:{1 << 18}", f"file:{KEYERROR_LOG}"],
                       capture_output=True, text=True, timeout=120, check=True)
    size = json.loads(r.stdout)["size"]
    data = log.read_bytes()
    ref = report_json(scan_file(log, workers=1))
    ref.pop("scan_seconds")
    assert ref["verdict"] == "crashed" and ref["lines"] == data.count(b"\n")
    for n in (2, 5, 8):
        with log.open("rb") as fh:
            cuts = [a for a, _ in _split_ranges(fh.fileno(), size, n)[1:]]
        # the premise: a cut lands inside a traceback (the line before it is not its last line)
        inside = [c for c in cuts if not data[data.rfind(b"\n", 0, c - 1) + 1 : c].startswith(b"KeyError")
                  and b"Traceback" not in data[c : data.find(b"\n", c)]]
        assert inside, n
        got = report_json(scan_file(log, workers=n, chunk_size=1 << 16))
        got.pop("scan_seconds")
        assert got == ref, n


def test_a_failing_worker_fails_the_scan(tmp_path: Path) -> None:
    """A forked worker's error reaches the caller with its message (no half report, no hang). Forks
    happen only in a process of one thread (the CLI's), so the scan runs in a child of the test."""
    import subprocess
    import sys
    import textwrap

    log = tmp_path / "x.log"
    log.write_bytes(b"[2026-11-29 09:40:00] filler\n" * 2000)
    code = textwrap.dedent(f"""
        import sys
        from symmtui.bringup import scan
        real = scan.find_candidates
        def broken(path, start, end, *args, **kw):
            if start > 0:
                raise OSError(5, "Input/output error")
            return real(path, start, end, *args, **kw)
        scan.find_candidates = broken
        try:
            scan.scan_file({str(log)!r}, workers=3)
        except RuntimeError as exc:
            print(exc)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("scan worker failed: OSError") and "Input/output error" in r.stdout, r.stdout


def test_a_process_running_threads_scans_its_ranges_in_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from symmtui.bringup import scan

    log = tmp_path / "x.log"
    log.write_bytes(READY_LOG.read_bytes() * 50)
    forks: list[int] = []
    monkeypatch.setattr(scan.os, "fork", lambda: forks.append(1) or 0)
    monkeypatch.setattr(scan.threading, "active_count", lambda: 2)
    one = report_json(scan_file(log, workers=1))
    three = report_json(scan_file(log, workers=3))
    for doc in (one, three):
        doc.pop("scan_seconds")
    assert three == one and forks == []


def test_scan_says_the_cause_and_next_step_in_the_boards_words() -> None:
    """scan lays out a Board as `wait` does (issue 31): the same cause and next step, word for word, and the
    same crash headline, for the real KeyError log."""
    rep = scan_file(KEYERROR_LOG)
    scanned, block = report_text(rep), verdict_lines(board(rep))

    def said(lines: list[str], label: str) -> str:
        return next(ln.split(":", 1)[1].strip() for ln in lines if ln.lstrip().startswith(f"{label}:"))

    for label in ("cause", "next"):
        assert said(scanned, label) == said(block, label) != ""
    assert "press " not in said(scanned, "next")  # a verb names the command, not the dashboard's key
    assert scanned[-1] == f"verdict: CRASHED: {board(rep).cause.headline}"  # type: ignore[union-attr]
    assert block[0].endswith(scanned[-1].removeprefix("verdict: CRASHED: "))
