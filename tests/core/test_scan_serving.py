"""Serving logs: `scan` thins decode/200 lines to a few per run, and so does the live engine's builder;
the report and the readiness state equal judging every line."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from bench.engine import READY, STARTUP, serving_block
from symmtui.bringup.scan import ScanReport, _decode, _Scan, report_json, scan_file
from symmtui.judge.events import split_prefix
from symmtui.judge.readiness import State
from symmtui.judge.rules import RuleSet

from .engine_kit import KEYERROR_LOG


def _every_line(path: Path) -> dict[str, Any]:
    """The report of feeding every line of ``path`` to the event builder and the readiness machine."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    scan = _Scan(RuleSet())
    scan.first_ts = split_prefix(_decode(1, lines[0][:4096]).plain).ts
    for no, raw in enumerate(lines, 1):
        scan.line(no, raw)
    for ev in scan.builder.flush():
        scan.event(ev)
    ts = split_prefix(_decode(0, lines[-1]).plain).ts
    if ts is not None:
        scan.last_ts = ts if scan.last_ts is None else max(scan.last_ts, ts)
    snap = scan.readiness.snapshot(scan.t)
    rep = ScanReport(
        path=str(path), size=len(data), lines=len(lines),
        verdict={State.READY: "ready", State.CRASHED: "crashed"}.get(snap.state, "none"), cause=snap.cause,
        phases=snap.phases, errors=snap.errors, warnings=snap.warnings, first_ts=scan.first_ts,
        last_ts=scan.last_ts, last_phase=snap.phase, progress=snap.progress_counts, seconds=0.0, runs=snap.run,
        snapshot=snap)
    out = report_json(rep)
    out.pop("scan_seconds")
    return out


def _serving(rng: random.Random, n: int) -> bytes:
    return serving_block(rng, n)


@pytest.fixture(scope="module")
def serving_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs appended to each other: a log whose start is gone (decode lines only prove ready); a
    launch whose warm-up 200 comes before its "fired up" line; a crash between decode lines; a last
    launch that never prints its marker (its decode lines prove it ready: the warm-up logs none)."""
    rng = random.Random(7)
    crash = KEYERROR_LOG.read_bytes().splitlines(keepends=True)
    warmup = b'[2026-11-29 09:48:03] INFO:     127.0.0.1:40000 - "POST /generate HTTP/1.1" 200 OK\n'
    parts = [
        _serving(rng, 3000),
        STARTUP.encode(), warmup, READY.encode(), _serving(rng, 5000),
        b"".join(crash[9:121]), _serving(rng, 2000),
        STARTUP.encode(), _serving(rng, 4000), warmup, _serving(rng, 3000),
    ]
    path = tmp_path_factory.mktemp("serving") / "server.log"
    path.write_bytes(b"".join(parts))
    return path


@pytest.fixture(scope="module")
def every_line(serving_log: Path) -> dict[str, Any]:
    return _every_line(serving_log)


@pytest.mark.parametrize(("workers", "chunk", "fast"), [(1, 1 << 18, True), (1, 4096, True), (2, 1 << 16, True),
                                                        (5, 1 << 14, True), (1, 1 << 18, False), (3, 4096, False)])
def test_thinned_scan_equals_judging_every_line(serving_log: Path, every_line: dict[str, Any], workers: int,
                                                chunk: int, fast: bool) -> None:
    """Both line finders (Hyperscan, the pure-Python one), runs cut by chunks and by worker ranges."""
    ref = every_line
    assert ref["runs"] == 3 and ref["verdict"] == "ready"  # the premise: decode lines after start-up prove it
    got = report_json(scan_file(serving_log, workers=workers, chunk_size=chunk, fast=fast))
    got.pop("scan_seconds")
    assert got == ref


def test_scan_skips_most_serving_lines(serving_log: Path) -> None:
    """The thinning itself: phase one hands on far fewer lines than the log has decode lines."""
    from symmtui.bringup.scan import find_candidates
    size = serving_log.stat().st_size
    cands, lines = find_candidates(str(serving_log), 0, size, RuleSet().rules, serving_log.read_bytes()[:1 << 20])
    assert lines > 17_000 and len(cands) < 400, len(cands)


def _live(path: Path, thin: bool, batch: int) -> tuple[object, list[tuple[str, int]]]:
    """The live engine's judgement: the builder fed in batches of ``batch`` lines, events to Readiness."""
    from symmtui.judge.events import EventBuilder
    from symmtui.judge.readiness import Readiness, ReadinessConfig
    from symmtui.logs.decode import make_line

    raw = path.read_bytes().rstrip(b"\n").split(b"\n")
    lines = [make_line(i + 1, 0, r) for i, r in enumerate(raw)]
    builder = EventBuilder(RuleSet(), thin_serving=thin)
    readiness = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
    events = []
    for k in range(0, len(lines), batch):
        events += builder.feed_many(lines[k : k + batch])
    events += builder.flush()
    for ev in events:
        readiness.feed(ev, 0.0)
    snap = readiness.snapshot(0.0)
    state = (snap.state, snap.run, snap.phase, [(p.name, p.log_start) for p in snap.phases], snap.cause,
             snap.errors, snap.warnings, snap.progress_counts)
    return state, [(e.rule_id, e.line_no) for e in events]


@pytest.fixture(scope="module")
def live_every_line(serving_log: Path) -> tuple[object, list[tuple[str, int]]]:
    return _live(serving_log, thin=False, batch=1000)


@pytest.mark.parametrize("batch", [1000, 100_000])  # batches, and the whole log as one buffer
def test_live_builder_judges_a_serving_log_like_every_line(
        serving_log: Path, live_every_line: tuple[object, list[tuple[str, int]]], batch: int) -> None:
    """Thinned: the same state (verdict, runs, phases, cause, errors, warnings) as matching every
    line; of each run of serving lines only the first makes an event (and so is marked in the pane)."""
    every_state, every_events = live_every_line
    thin_state, thin_events = _live(serving_log, thin=True, batch=batch)
    assert thin_state == every_state
    serving = {r.id for r in RuleSet().rules if "serving" in r.roles}
    assert [e for e in thin_events if e[0] not in serving] == [e for e in every_events if e[0] not in serving]
    kept = [e for e in thin_events if e[0] in serving]
    every_serving = [e for e in every_events if e[0] in serving]
    assert 0 < len(kept) <= 4 < len(every_serving) and kept[0] == every_serving[0]


def test_live_builder_ready_from_serving_lines_when_the_start_is_gone(tmp_path: Path) -> None:
    """Attached late (no start-up lines): the first decode line proves READY, with the thinning too,
    whether lines come one by one (batches under BATCH_MIN) or as one buffer."""
    log = tmp_path / "late.log"
    log.write_bytes(_serving(random.Random(3), 3000))
    state, events = _live(log, thin=True, batch=50)
    assert (state, events) == _live(log, thin=True, batch=3000)
    assert state[0] is State.READY and len(events) == 1
    assert events[0][1] == 1 + next(i for i, ln in enumerate(log.read_bytes().split(b"\n"))
                                    if b"Decode batch" in ln or b"POST /v1" in ln)
