"""Only a process's own records count (issue 29, item 3): text inside a request or access line is content, never a
record, a rank, an error or a verdict. Constructed hostile input (engine_kit.QUOTING_REQUESTS, labelled so) appended
to a real healthy log leaves it READY in scan, wait, the bundle, the metrics and a webhook; more records joined on
one line than ranks exist are each their own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from symmtui.bringup.scan import scan_file
from symmtui.bundle.format import SUFFIX, read_bundle
from symmtui.judge.events import EventBuilder
from symmtui.judge.ranks import RankBoard
from symmtui.judge.readiness import Readiness, ReadinessConfig
from symmtui.judge.rules import Kind
from symmtui.logs.lineparts import records, split_prefix, split_records
from tests.core.engine_kit import QUOTING_REQUESTS, ROOT, env, quoting_log, symmtui_cmd
from tests.notify.kit import receiver


def test_a_request_line_is_one_record_whatever_it_quotes() -> None:
    for line in QUOTING_REQUESTS:
        assert len(split_records(line)) == 1  # one record: the rank board reads no rank from its content
        recs, _ = records(line)  # what the rules read: its content blanked
        assert len(recs) == 1 and len(recs[0]) == len(line), line
        for word in ("TP3", "TP12", "Worker_TP3", "[rank3]", "OutOfMemoryError", "SIGSEGV", "Traceback"):
            assert word not in recs[0], (word, line)
    b = EventBuilder()
    events = [e for i, ln in enumerate(QUOTING_REQUESTS, 1) for e in b.feed_plain(i, ln)] + b.flush()
    assert [e for e in events if e.kind in (Kind.CRASH, Kind.WARNING)] == []
    board = RankBoard()
    for ln in QUOTING_REQUESTS:
        for rec in split_records(ln):
            board.feed(rec, 1.0, None, None)
    assert {s.label for s in board.states()} <= {None}  # the API server and uvicorn are no ranks: no TP3, TP12, rank 3


def test_a_prompt_over_several_lines_is_content_until_the_next_record() -> None:
    """TGI's router logs a request's Input with its real newlines (huggingface/text-generation-inference#3203's
    shape; the quoted lines here are constructed): no line of it is judged, the next record is."""
    lines = ["2025-05-01T01:31:14.787487Z DEBUG generate{parameters=GenerateParameters { best_of: None }}: "
             "text_generation_router::server: router/src/server.rs:291: Input: hello",
             "Traceback (most recent call last):",
             '  File "/x.py", line 1, in f',
             "torch.OutOfMemoryError: CUDA out of memory.",
             "2025-05-01T01:31:15.000000Z ERROR text_generation_launcher: Webserver Crashed"]
    b = EventBuilder()
    events = [e for i, ln in enumerate(lines, 1) for e in b.feed_plain(i, ln)] + b.flush()
    assert [(e.rule_id, e.line_no) for e in events if e.kind is Kind.CRASH] == [("tgi-shard-failed", 5)]


def test_scan_of_a_healthy_log_with_quoting_requests_stays_ready(tmp_path: Path) -> None:
    rep = scan_file(quoting_log(tmp_path / "server.log"))
    assert rep.verdict == "ready" and rep.cause is None and rep.errors == () and rep.warnings == ()


def test_wait_with_a_bundle_and_a_webhook_stays_ready(tmp_path: Path) -> None:
    log = quoting_log(tmp_path / "server.log")
    bundle = tmp_path / f"run{SUFFIX}"
    with receiver() as hooks:
        cfg = tmp_path / "symmtui.toml"
        cfg.write_text(f'[server]\nlog = "{log}"\n\n[notify]\nwebhook = "{hooks.url("/hook")}"\non = ["ready", "crashed"]\n')
        done = subprocess.run(symmtui_cmd("wait", "--config", str(cfg), "--timeout", "30", "--bundle", str(bundle)),
                              capture_output=True, text=True, timeout=120, env=env(), stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and "READY after" in done.stdout, done.stdout + done.stderr
        assert "CRASHED" not in done.stdout and "error" not in done.stdout.lower()
        got = hooks.wait_for(1)
        messages = [str(g.body) for g in got]
        assert any("READY" in m for m in messages) and not any("CRASHED" in m for m in messages), messages
    recorded = read_bundle(bundle)
    assert [v.get("state") for v in recorded.verdicts] == ["ready"]
    assert recorded.final is not None and recorded.final.get("cause") is None
    boards = [row[2] for row in recorded.data["boards"]]  # [t, generation, Board]
    assert boards and {b["state"]["v"] for b in boards} <= {"waiting", "starting", "ready"}
    assert boards[-1]["state"]["v"] == "ready" and all(n["snapshot"]["cause"] is None for n in boards[-1]["nodes"])
    kinds = [row[2]["kind"]["v"] for row in recorded.data["events"]]
    assert "ready" in kinds and "crash" not in kinds and "warning" not in kinds


def test_the_metrics_say_ready(tmp_path: Path) -> None:
    log = quoting_log(tmp_path / "server.log")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--timeout", "30",
                             "--no-record", "--metrics-port", str(port), "--metrics-linger", "60"],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        said = ""
        while not said.endswith("Ctrl-C ends it\n"):  # it lingers once its verdict is in
            line = proc.stderr.readline()
            assert line, said
            said += line
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
            metrics = r.read().decode()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=30) as r:
            assert r.status == 200 and r.read().decode().strip() == "ready"
        states = [ln for ln in metrics.splitlines() if ln.startswith("symmtui_bringup_state{") and ln.endswith(" 1.0")]
        assert len(states) == 1 and 'symmtui_bringup_state="ready"' in states[0], states
        assert "symmtui_bringup_crashes_total" not in metrics or all(
            ln.endswith(" 0.0") for ln in metrics.splitlines() if ln.startswith("symmtui_bringup_crashes_total{"))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "READY" in out


def test_more_records_on_a_line_than_ranks_each_keep_their_own_source_and_time() -> None:
    """Constructed: 13 ranks' records joined on one physical line (concurrent writers; the H200 showed two), the
    13th a ready line and the 10th a traceback header: each is its own record, with its own rank and stamp."""
    recs = [f"[2026-12-01 10:00:{i:02d} TP{i}] Load weight end. mem usage=6.00 GB." for i in range(13)]
    recs[9] = "[2026-12-01 10:00:09 TP9] Scheduler hit an exception: KeyError: 12"
    recs[12] = "[2026-12-01 10:00:12] The server is fired up and ready to roll!"
    line = "".join(recs)
    parts = split_records(line)
    assert parts == recs
    assert split_prefix(parts[12]).ts == split_prefix(recs[12]).ts and split_prefix(parts[9]).key == "TP9"
    b = EventBuilder()
    r = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
    for ev in b.feed_plain(1, line) + b.flush():
        r.feed(ev, 0.0)
    crash = [e for e in r.snapshot(0.0).errors if e.kind is Kind.CRASH]
    assert crash and crash[0].ranks == frozenset({9})  # TP9's, not the 8th record's (TP7)
