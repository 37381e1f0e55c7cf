"""Bringup end to end: a real writer process, real child processes for the pid watch, threads that stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from symmtui.bringup.engine import Bringup, EngineUpdate
from symmtui.judge.readiness import ReadinessConfig, State
from symmtui.judge.rules import Kind
from symmtui.proc.pidwatch import process_exit_status
from tests.handclock import HandClock

from .engine_kit import KEYERROR_LOG, READY_LOG, Health, Writer, http_server, wait_until

_threads_before: set[threading.Thread] = set()


@pytest.fixture(autouse=True)
def _note_threads() -> None:
    """The threads alive when the test starts: an earlier test's engine thread still winding down on this
    worker is not this test's."""
    _threads_before.clear()
    _threads_before.update(threading.enumerate())


def _no_engine_threads() -> bool:
    """No engine thread started during this test is still alive."""
    return not [t for t in threading.enumerate() if t.name.startswith("symmtui-") and t not in _threads_before]


class Collector:
    def __init__(self) -> None:
        self.updates: list[tuple[float, EngineUpdate]] = []
        self.lock = threading.Lock()

    def __call__(self, up: EngineUpdate) -> None:
        with self.lock:
            self.updates.append((time.monotonic(), up))

    def lines(self) -> list[str]:
        with self.lock:
            return [ln.text for _, u in self.updates for ln in u.lines if not ln.progress]


def _start(log: Path | None, **kw: object) -> tuple[Bringup, Collector]:
    col = Collector()
    cfg = kw.pop("config", ReadinessConfig(timeout=120))
    b = Bringup(log, config=cfg, on_update=col, **kw)  # type: ignore[arg-type]
    b.start()
    return b, col


def test_log_that_does_not_exist_yet_then_ready(tmp_path: Path) -> None:
    log = tmp_path / "not" / "yet" / "server.log"
    b, col = _start(log)
    try:
        assert b.snapshot().state is State.WAITING
        log.parent.mkdir(parents=True)
        with Writer(log) as w:
            text = READY_LOG.read_text()
            cut = text.index("Loading safetensors checkpoint shards:  50%")
            w.write(text[:cut])
            assert wait_until(lambda: b.snapshot().phase == "loading weights")
            s = b.snapshot()
            assert s.state is State.STARTING and s.progress is not None and 0.4 < s.progress < 0.5
            w.write(text[cut:])
            snap = b.wait_final(30)
    finally:
        b.stop()
    assert snap.state is State.READY
    assert col.lines()[-1].endswith("The server is fired up and ready to roll!")
    assert len(col.lines()) == len(READY_LOG.read_text().splitlines())
    assert _no_engine_threads()


def test_crash_written_live_merges_all_ranks(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w:
        b, col = _start(log)
        try:
            w.write(KEYERROR_LOG.read_text())
            snap = b.wait_final(30)
            assert wait_until(lambda: (c := b.snapshot().cause) is not None and c.count == 8)
            snap = b.snapshot()
        finally:
            b.stop()
    assert snap.state is State.CRASHED
    assert snap.cause is not None and snap.cause.headline() == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)"
    events = [e for _, u in col.updates for e in u.events]
    assert any(e.kind is Kind.CRASH for e in events)


def test_existing_log_gives_its_verdict_at_once(tmp_path: Path) -> None:
    b, _ = _start(READY_LOG)
    try:
        snap = b.wait_final(30)
    finally:
        b.stop()
    assert snap.state is State.READY and snap.verdict_elapsed is not None and snap.verdict_elapsed < 10


def test_new_only_ignores_what_is_there(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(KEYERROR_LOG.read_text())
    with Writer(log) as w:
        b, col = _start(log, new_only=True)
        try:
            # "new" means written after the follower opened the file (it opens it in its own thread)
            assert wait_until(lambda: any(n.kind == "opened" for _, u in list(col.updates) for n in u.notices))
            # a CRASHED verdict (final) would come first if the old crash were judged
            w.write("[2026-11-29 09:48:04] The server is fired up and ready to roll!\n")
            snap = b.wait_final(30)
        finally:
            b.stop()
    assert snap.state is State.READY


def test_tail_start_still_finds_an_early_crash_in_the_background(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    # filler that proves nothing (a served request's line would prove READY from the tail alone)
    filler = "".join(f"[2026-11-29 10:00:{i % 60:02d} TP0] Cache flushed successfully!\n" for i in range(20000))
    log.write_text(KEYERROR_LOG.read_text() + filler)
    b, col = _start(log, tail_lines=50)
    try:
        snap = b.wait_final(60)
    finally:
        b.stop()
    assert snap.state is State.CRASHED
    assert snap.cause is not None and snap.cause.count == 8
    first = [u for _, u in col.updates if u.lines]
    assert first and len(first[0].lines) <= 50 + 5  # the display got the tail, not the whole file


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.parametrize(
    ("code", "expect", "rc"),
    [("import sys; sys.exit(1)", "process exited with code 1", 1),
     ("import sys; sys.exit(0)", "process exited with code 0", 0),
     ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "process killed by signal 9 (SIGKILL)", -9)],
)
def test_pid_exit_without_ready_is_a_crash(tmp_path: Path, code: str, expect: str, rc: int) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(); " + code], stdin=subprocess.PIPE)
    b, _ = _start(log, pid=proc.pid)
    try:
        assert wait_until(lambda: b.snapshot().process_detail == "process running")
        assert proc.stdin is not None
        proc.stdin.close()
        snap = b.wait_final(30)
    finally:
        b.stop()
        proc.wait(10)
    assert snap.state is State.CRASHED
    assert snap.cause is not None and snap.cause.summary == f"{expect} before it was ready"
    # the engine never reaped our child: its exit code is still ours to read
    assert proc.returncode == rc


def test_pid_of_a_stranger_exit_code_from_proc(tmp_path: Path) -> None:
    """A process that is not the engine's child: its code is read while it is a zombie."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert wait_until(lambda: not process_exit_status(proc.pid)[0], timeout=20)
    alive, code = process_exit_status(proc.pid)
    assert (alive, code) == (False, 3)
    proc.wait()


def test_dead_pid_at_start_is_a_crash(tmp_path: Path) -> None:
    proc = _child("pass")
    proc.wait()  # reaped: the pid no longer exists
    b, _ = _start(tmp_path / "server.log", pid=proc.pid)
    try:
        snap = b.wait_final(30)
    finally:
        b.stop()
    assert snap.state is State.CRASHED and snap.cause is not None and "exit code unknown" in snap.cause.summary


def test_timeout_and_stall(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    clock = HandClock(0.0)

    def states() -> list[State]:
        with col.lock:
            return [u.snapshot.state for _, u in col.updates]

    with Writer(log) as w:
        w.write("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n")
        b, col = _start(log, config=ReadinessConfig(timeout=4.0, stall=0.5), clock=clock)
        try:
            assert wait_until(lambda: b.snapshot().phase == "init distributed", timeout=30)
            clock.now = 1.0  # no new line for 1 s > stall
            # every state change is sent at once, so the updates record each transition
            assert wait_until(lambda: State.STALLED in states(), timeout=30)
            assert b.snapshot().state is State.STALLED
            w.write("still alive\n")
            assert wait_until(lambda: State.STARTING in states()[states().index(State.STALLED):], timeout=30)
            clock.now = 5.0  # past the timeout
            snap = b.wait_final(30)
        finally:
            b.stop()
    assert snap.state is State.TIMED_OUT and snap.verdict_elapsed == 4.0
    seq = states()
    assert seq[-1] is State.TIMED_OUT and seq.count(State.STALLED) >= 1


def test_updates_are_coalesced(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w:
        b, col = _start(log)
        try:
            for i in range(40):
                w.write("".join(f"line {i}.{j}\n" for j in range(50)))
            assert wait_until(lambda: len(col.lines()) == 2000)
        finally:
            b.stop()
    assert col.lines() == [f"line {i}.{j}" for i in range(40) for j in range(50)]
    # updates that carry no state change are at least ~50 ms apart (at most ~20 a second)
    times = [t for t, u in col.updates if u.lines]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(g >= 0.04 for g in gaps[1:]), gaps


def test_restart_follows_a_new_log(tmp_path: Path) -> None:
    first = tmp_path / "run1.log"
    first.write_text(KEYERROR_LOG.read_text())
    b, col = _start(first)
    try:
        assert b.wait_final(30).state is State.CRASHED
        gen = b.generation
        second = tmp_path / "run2.log"
        b.restart(second)
        assert b.generation == gen + 1
        s = b.snapshot()
        assert s.state is State.WAITING and s.cause is None and s.elapsed < 5
        with Writer(second) as w:
            w.write(READY_LOG.read_text())
            snap = b.wait_final(30)
    finally:
        b.stop()
    assert snap.state is State.READY
    assert col.updates[-1][1].generation == gen + 1
    assert _no_engine_threads()


def test_stop_is_clean_and_idempotent(tmp_path: Path) -> None:
    b, col = _start(tmp_path / "never.log", pid=os.getpid())
    assert wait_until(lambda: b.snapshot().process_detail == "process running")
    b.stop()
    b.stop()
    assert col.updates[-1][1].snapshot.state is State.STOPPED
    assert _no_engine_threads()


def test_process_killed_mid_write_flushes_the_open_traceback(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    code = (
        "import os, signal, sys\n"
        f"f = open({str(log)!r}, 'a')\n"
        "f.write('Traceback (most recent call last):\\n  File \"/x/runner.py\", line 9, in main\\n')\n"
        "f.flush(); sys.stdin.read(); os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    b, _ = _start(log, pid=proc.pid)
    try:
        assert wait_until(lambda: b.snapshot().state is State.STARTING)
        assert proc.stdin is not None
        proc.stdin.close()
        snap = b.wait_final(30)
    finally:
        b.stop()
        proc.wait(10)
    assert snap.state is State.CRASHED and snap.cause is not None
    assert snap.cause.summary == "Traceback with no exception line at runner.py:9"
    assert snap.process_detail == f"process killed by signal {int(signal.SIGSEGV)} (SIGSEGV)"


def test_rotation_mid_load_keeps_the_bring_up(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    text = READY_LOG.read_text()
    cut = text.index("[2026-11-29 09:47:23 TP0] Load weight end.")
    with Writer(log) as w:
        b, col = _start(log)
        try:
            w.write(text[:cut])
            assert wait_until(lambda: b.snapshot().phase == "loading weights")
            w._op(op="rename", to=str(tmp_path / "server.log.1"))
            w._op(op="reopen")
            w.write(text[cut:])
            snap = b.wait_final(30)
        finally:
            b.stop()
    assert snap.state is State.READY
    assert [p.name for p in snap.phases][:3] == ["launching", "init distributed", "loading weights"]
    kinds = [n.kind for _, u in col.updates for n in u.notices]
    assert "rotated" in kinds
    assert len(col.lines()) == len(text.splitlines())


def test_stop_from_inside_on_update(tmp_path: Path) -> None:
    holder: list[Bringup] = []

    def on_update(up: EngineUpdate) -> None:
        if up.snapshot.state is State.READY:
            holder[0].stop()

    b = Bringup(READY_LOG, on_update=on_update)
    holder.append(b)
    b.start()
    assert b.wait_final(30).state is State.READY
    assert wait_until(_no_engine_threads)


def test_burst_loses_no_event(tmp_path: Path) -> None:
    """40k lines (3 MB, past the follower's 1 MiB reads) in 20 bursts, 200 of them the same warning from
    8 ranks: the merged count is exact."""
    log = tmp_path / "server.log"
    with Writer(log) as w:
        b, col = _start(log)
        try:
            n = 0
            for burst in range(20):
                chunk = []
                for i in range(2000):
                    n += 1
                    if n % 200 == 0:
                        chunk.append(f"[2026-11-29 10:00:00 TP{(n // 200) % 8}] TorchSymmMemCommunicator: "
                                     "Device capability 12 not supported, communicator is not available.\n")
                    else:
                        chunk.append(f"[2026-11-29 10:00:00 TP0] Decode batch. #running-req: {burst}, #token: {i}\n")
                w.write("".join(chunk))
            assert wait_until(lambda: len(col.lines()) == 40_000, timeout=60)
            snap = b.snapshot()
        finally:
            b.stop()
    assert len(snap.warnings) == 1
    assert snap.warnings[0].count == 200 and snap.warnings[0].ranks == frozenset(range(8))


def test_crash_text_in_a_live_progress_line_counts_once(tmp_path: Path) -> None:
    """A tqdm bar overwritten (CR) by an error: the provisional update is not judged as a crash; the
    finished line is, once."""
    log = tmp_path / "server.log"
    bar = "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:05<00:15]"
    err = "[2026-11-29 09:40:20 TP0] RuntimeError: CUDA error: out of memory"
    with Writer(log) as w:
        b, col = _start(log)
        try:
            w.write(bar + "\r" + err)  # no newline yet: a provisional update of the unfinished line
            assert wait_until(lambda: any(ln.progress and ln.text == err
                                          for _, u in col.updates for ln in u.lines))
            assert b.snapshot().state is State.STARTING
            w.write("\n")
            snap = b.wait_final(30)
        finally:
            b.stop()
    assert snap.state is State.CRASHED and snap.cause is not None and snap.cause.count == 1
    crashes = [e for _, u in col.updates for e in u.events if e.kind is Kind.CRASH]
    assert [(e.line_no, e.count) for e in crashes] == [(1, 1)]
    assert col.lines() == [err]


def test_live_progress_bar_is_one_last_line(tmp_path: Path) -> None:
    """A tqdm bar updated in place many times is one entry of last_lines (its latest), after the finished lines."""
    log = tmp_path / "server.log"
    first = "[2026-11-29 09:40:13 TP0] Load weight begin. avail mem=93.21 GB"
    bar = "Loading safetensors checkpoint shards: {}% Completed | {}/40 [00:05<07:04, 5.18s/it]"
    with Writer(log) as w:
        b, _ = _start(log)
        try:
            w.write(first + "\n")
            for i in range(25):
                w.write("\r" + bar.format(i * 100 // 40, i))
                assert wait_until(lambda i=i: b.snapshot().progress_counts == (i, 40))
            snap = b.snapshot()
            assert snap.last_lines == (first, bar.format(60, 24))
            w.write("\n[2026-11-29 09:47:23 TP0] Load weight end.\n")
            assert wait_until(lambda: b.snapshot().phase == "allocating KV cache")
            snap = b.snapshot()
        finally:
            b.stop()
    assert snap.last_lines == (first, bar.format(60, 24), "[2026-11-29 09:47:23 TP0] Load weight end.")


def _rank_crash(rank: int) -> str:
    """One rank's copy of the SM120 crash, as SGLang prints it (the fixture's shape)."""
    return (f"[2026-12-01 10:00:01 TP{rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/x/torch_symm_mem.py", line 83, in __init__\n    x\nKeyError: 12\n')


def test_a_crash_settles_a_moment_after_its_last_copy_not_its_first(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """While other ranks' copies of the cause still arrive (a log that never goes quiet), the crash is not
    settled: SETTLE_MAX runs from the latest copy; SETTLE_CAP bounds it from the crash. A hand clock moves time;
    the quiet rule is taken out of the way (the log keeps talking)."""
    from symmtui.bringup import engine

    monkeypatch.setattr(engine, "SETTLE_QUIET", 1e6)
    log = tmp_path / "server.log"
    clock = HandClock(0.0)
    with Writer(log) as w:
        b, col = _start(log, config=ReadinessConfig(timeout=None, stall=0), clock=clock)

        def last() -> EngineUpdate:
            with col.lock:
                return col.updates[-1][1]

        def after(text: str) -> EngineUpdate:
            """Write ``text``; the first update that carries it (judged at the clock as it is now)."""
            n = len(col.updates)
            w.write(text)
            assert wait_until(lambda: any(ln.text in text for _, u in col.updates[n:] for ln in u.lines), timeout=30)
            return last()

        try:
            after(_rank_crash(0))
            assert wait_until(lambda: last().snapshot.state is State.CRASHED, timeout=30)
            assert not last().settled
            clock.advance(0.6)
            after(_rank_crash(1))
            assert wait_until(lambda: last().snapshot.cause is not None and last().snapshot.cause.count == 2, timeout=30)
            clock.advance(0.6)  # 1.2 s after the crash, 0.6 s after its last copy
            up = after("[2026-12-01 10:00:02] still talking\n")
            assert not up.settled
            clock.advance(0.5)  # 1.1 s after the last copy
            assert wait_until(lambda: last().settled, timeout=30)
            assert last().snapshot.cause is not None and last().snapshot.cause.count == 2
        finally:
            b.stop()


def test_a_health_check_that_answers_before_the_log_is_read_counts_after_the_phases_it_tells_of(tmp_path: Path) -> None:
    """A server writes its log before its port answers. Attached to a long log (a loaded host, a backlog), the
    health check answered while the lines of the CUDA-graph phase were unread: READY came with that phase missing
    from the bring-up's phases (the demo story under load). The check's READY now waits for the log to be read up to
    where it was when the check answered. (The filler is constructed: ordinary lines, not a server's.)"""
    lines = READY_LOG.read_text().splitlines(keepends=True)
    filler = "".join(f"[2026-11-29 09:47:25 TP0] filler line {i} of a long backlog\n" for i in range(200_000))
    log = tmp_path / "server.log"
    log.write_text("".join(lines[:133]) + filler + "".join(lines[133:160]))  # up to "Application startup"
    with http_server(Health(200)) as url:
        b, _col = _start(log, url=url)
        try:
            snap = b.wait_final(60)
        finally:
            b.stop()
    assert snap.state is State.READY and "health check" in snap.detail, snap.detail
    walked = [span.name for span in snap.phases]
    assert "capturing CUDA graphs" in walked, walked
