"""A log read from a command (`--log-cmd`): real processes, the file follower's line handling, restarts, no orphans."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from symmtui.logs.decode import LogLine
from symmtui.logs.follow import FileNotice, LogFollower, LogItem
from symmtui.logs.logcmd import Backoff, CommandFollower, LogCommand, LogCommandError, ReplayFilter

from .engine_kit import FIXTURES, READY_LOG

WRITER = FIXTURES / "log_cmd_writer.py"
FAST = Backoff(first=0.02, cap=0.05, reset_after=10.0)


def writer(*args: str) -> LogCommand:
    return LogCommand.from_argv([sys.executable, str(WRITER), *args])


class Collector:
    """Runs ``CommandFollower.watch`` on a thread and keeps every item it hands over."""

    def __init__(self, follower: CommandFollower) -> None:
        self.follower = follower
        self.items: list[LogItem] = []
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=follower.watch, args=(self.stop, self._on_batch), daemon=True)

    def _on_batch(self, items: list[LogItem]) -> None:
        with self.cond:
            self.items.extend(items)
            self.cond.notify_all()

    def wait(self, pred: Callable[[list[LogItem]], bool], timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: pred(self.items), timeout), self.items[-5:]

    def lines(self) -> list[LogLine]:
        with self.cond:
            return [it for it in self.items if isinstance(it, LogLine) and not it.progress]

    def notices(self, kind: str) -> list[FileNotice]:
        with self.cond:
            return [it for it in self.items if isinstance(it, FileNotice) and it.kind == kind]


@contextmanager
def following(command: LogCommand, **kw: object) -> Iterator[Collector]:
    follower = CommandFollower(command, **kw)  # type: ignore[arg-type]
    c = Collector(follower)
    c.thread.start()
    try:
        yield c
    finally:
        c.stop.set()
        c.thread.join(10)
        follower.close()
        assert not c.thread.is_alive()


def _lines_of(n: int) -> Callable[[list[LogItem]], bool]:
    return lambda items: sum(1 for it in items if isinstance(it, LogLine) and not it.progress) >= n


# ---------------------------------------------------------------- the same lines as a file


HOSTILE = (
    b"\x1b[32mINFO\x1b[0m coloured\n"
    b"Loading safetensors checkpoint shards:  50% | 1/2\rLoading safetensors checkpoint shards: 100% | 2/2\n"
    b"bad utf-8 \xff\xfe here\n"
    b"a NUL\x00 in the middle\n"
    b"windows line\r\n"
    + b"x" * (70 * 1024) + b"\n"
    + b"unterminated last line"
)


def test_a_commands_lines_are_cut_exactly_as_the_same_files(tmp_path: Path) -> None:
    """CR progress, ANSI, bad UTF-8, NUL, CRLF, a line over 64 KiB, no final newline: same LogLines."""
    log = tmp_path / "server.log"
    log.write_bytes(READY_LOG.read_bytes() + HOSTILE)
    with LogFollower(log) as f:
        from_file = [it for it in f.poll() if isinstance(it, LogLine) and not it.progress]
        f2: list[LogItem] = []
        f._split.flush(f2)  # a file's unterminated last line is emitted when the file ends for good
        from_file += [it for it in f2 if isinstance(it, LogLine)]
    with following(writer(str(log), "--sleep", "30"), backoff=FAST) as c:
        c.wait(_lines_of(len(from_file) - 1))
        time.sleep(0.05)
        got = c.lines()
    # the unterminated last line is still pending while the command runs (as it would be in a file)
    assert got == from_file[:-1]
    assert got[-1].truncated and len(got[-1].text) == 64 * 1024
    assert any("\ufffd" in ln.text for ln in got)
    assert c.notices("started") and "(pid " in c.notices("started")[0].message


def test_stderr_is_read_too_and_the_last_line_is_flushed_at_exit(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("first\n")
    with following(writer(str(log), "--stderr", "Error: No such container: sglang", "--exit", "1"),
                   backoff=Backoff(first=5, cap=5)) as c:
        c.wait(lambda items: any(isinstance(it, FileNotice) and it.kind == "exited" for it in items))
        texts = [ln.text for ln in c.lines()]
        exited = c.notices("exited")[0].message
    assert texts == ["first", "Error: No such container: sglang"]
    assert "exited (code 1)" in exited and "'Error: No such container: sglang'" in exited
    assert "restarting in 5 s" in exited


# ---------------------------------------------------------------- restarts


def test_backoff_doubles_to_the_cap_and_starts_over_after_a_long_run() -> None:
    b = Backoff(first=0.5, cap=10.0, reset_after=10.0)
    delays: list[float] = []
    d: float | None = None
    for _ in range(7):
        d = b.delay(d, ran_for=0.1)
        delays.append(d)
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert b.delay(10.0, ran_for=30.0) == 0.5  # it ran a while: a fresh start


def test_a_restarted_command_that_replays_everything_shows_each_line_once(tmp_path: Path) -> None:
    """`docker logs -f` after the container restarted: the whole log again, then the new lines."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "1.log").write_text("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\nline two\n")
    (runs / "2.log").write_text("[2026-11-29 09:41:00 TP0] Load weight begin. avail mem=93.21 GB\n")
    (runs / "3.log").write_text("third run\n")
    with following(writer("--runs", str(runs), "--exit", "3"), backoff=FAST) as c:
        c.wait(lambda items: len([it for it in items if isinstance(it, FileNotice) and it.kind == "started"]) >= 4)
        c.stop.set()
        lines = c.lines()
        replayed = c.notices("replayed")
    assert [ln.text for ln in lines] == ["[2026-11-29 09:40:09 TP0] Init torch distributed begin.", "line two",
                                         "[2026-11-29 09:41:00 TP0] Load weight begin. avail mem=93.21 GB",
                                         "third run"]
    assert [ln.no for ln in lines] == [1, 2, 3, 4]  # numbered as one stream, skipped lines leave no gap
    assert "printed 2 lines already shown" in replayed[0].message
    assert "printed 3 lines already shown" in replayed[1].message


def test_exit_notices_count_the_runs_and_say_the_wait(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("same line\n")
    with following(writer(str(log), "--exit", "255"), backoff=FAST) as c:
        c.wait(lambda items: sum(1 for it in items if isinstance(it, FileNotice) and it.kind == "exited") >= 3)
        exited = [n.message for n in c.notices("exited")][:3]
        assert len(c.lines()) == 1  # the same line on every run: shown once
    assert [m.split("restarting in ")[1].split(" s")[0] for m in exited] == ["0.02", "0.04", "0.05"]
    assert "(run 2;" in exited[0] and "(run 4;" in exited[2]


def test_replay_filter_tail_overlap_new_first_line_and_the_window() -> None:
    """`tail -F` after a reconnect prints its last lines again; a first line never seen is new."""
    def line(no: int, text: str) -> LogLine:
        return LogLine(no, no * 10, text, text)

    f = ReplayFilter(window=5.0)
    f.restart(0.0)
    f.filter([line(i, t) for i, t in enumerate("abcde", 1)], 0.0)
    f.restart(100.0)  # tail -F: the last three lines again, then two new ones
    kept = f.filter([line(i, t) for i, t in enumerate(["c", "d", "e", "f", "c"], 1)], 100.5)
    assert [k.text for k in kept if isinstance(k, LogLine)] == ["f", "c"] and f.skipped == 3
    f.restart(200.0)  # a first line never seen: nothing is skipped
    kept = f.filter([line(1, "g"), line(2, "a")], 200.1)
    assert [k.text for k in kept if isinstance(k, LogLine)] == ["g", "a"] and f.skipped == 0
    f.restart(300.0)  # a seen first line, but long after the start: not a replay
    kept = f.filter([line(1, "a"), line(2, "b")], 306.0)
    assert [k.text for k in kept if isinstance(k, LogLine)] == ["a", "b"]
    f.restart(400.0)  # a replay that goes another way part-way: from there on, delivered
    kept = f.filter([line(1, "a"), line(2, "b"), line(3, "X"), line(4, "d")], 400.1)
    assert [k.text for k in kept if isinstance(k, LogLine)] == ["X", "d"]


# ---------------------------------------------------------------- cannot start, stop


def test_a_command_that_cannot_start(tmp_path: Path) -> None:
    missing = LogCommand.parse("no-such-log-program-xyz -f")
    with pytest.raises(LogCommandError, match="not found on PATH"):
        missing.check()
    script = tmp_path / "tail.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(LogCommandError, match="not an executable file"):
        LogCommand.parse(str(script)).check()
    with pytest.raises(LogCommandError, match="check the quoting"):
        LogCommand.parse("ssh node1 'tail -F")
    with following(missing, backoff=FAST) as c:
        c.wait(lambda items: bool(items))
        time.sleep(0.15)  # several retries
        errors = c.notices("error")
    assert len(errors) == 1 and "not found on PATH" in errors[0].message  # said once, retried quietly


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found


def test_no_tail_is_left_behind_when_the_session_closes(tmp_path: Path) -> None:
    """`tail -F` through a shell pipeline (three processes): all of them end with the session."""
    from tests.ui.kit import watched

    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n")
    cmd = LogCommand.parse(f"tail -n +1 -F {log} | cat | cat", shell=True)
    session = watched(cmd)
    engine = session.head.engine
    assert engine is not None
    follower = engine._follower
    assert isinstance(follower, CommandFollower)
    deadline = time.monotonic() + 10
    while (follower.pid is None or len(_group(follower.pid)) < 4) and time.monotonic() < deadline:
        time.sleep(0.02)
    pgid = follower.pid
    assert pgid is not None and len(_group(pgid)) == 4  # sh, tail, cat, cat
    session.close()
    left = _group(pgid)
    assert left == [], [Path(f"/proc/{p}/stat").read_text() for p in left]
    assert follower.pid is None


# ---------------------------------------------------------------- the engine over a command


def test_with_a_url_the_log_ready_line_waits_for_the_probe() -> None:
    """Readiness as with a file: the log's ready line alone is not READY while /health says 503."""
    from symmtui.bringup.engine import Bringup
    from symmtui.judge.readiness import ReadinessConfig, State

    from .engine_kit import Health, http_server, wait_until

    health = Health(503)
    with http_server(health) as url:
        engine = Bringup(writer(str(READY_LOG), "--sleep", "60"), url=url, config=ReadinessConfig(timeout=30),
                         probe_interval=(0.02, 0.05))
        engine.start()
        try:
            assert wait_until(lambda: engine.snapshot().marker_seen)
            assert engine.snapshot().state is State.STARTING and not engine.snapshot().probe_ok
            health.status = 200
            assert wait_until(lambda: engine.snapshot().state is State.READY)
        finally:
            engine.stop()


def test_a_relaunch_over_the_same_command_skips_what_it_replays(tmp_path: Path) -> None:
    """Bringup.restart() with the same command (a dashboard relaunch): the new generation does not judge
    again the old launch's lines the restarted command prints first."""
    import queue

    from symmtui.bringup.engine import Bringup, EngineUpdate
    from symmtui.judge.readiness import ReadinessConfig, State

    runs = tmp_path / "runs"
    runs.mkdir()
    crash = (FIXTURES / "sglang-tp8-symm-mem-keyerror.log").read_text()
    (runs / "1.log").write_text(crash)
    (runs / "2.log").write_text("[2026-11-29 10:00:00 TP0] Load weight begin. avail mem=93.21 GB\n")
    updates: queue.Queue[EngineUpdate] = queue.Queue()
    engine = Bringup(writer("--runs", str(runs), "--sleep", "60"), config=ReadinessConfig(timeout=30),
                     on_update=updates.put)
    engine.start()
    try:
        assert engine.wait_final(10).state is State.CRASHED
        engine.restart()
        deadline = time.monotonic() + 10
        seen: list[LogLine] = []
        notices: list[FileNotice] = []
        while not any("Load weight begin" in ln.text for ln in seen) and time.monotonic() < deadline:
            up = updates.get(timeout=10)
            if up.generation == 1:
                seen += up.lines
                notices += up.notices
        snap = engine.snapshot()
    finally:
        engine.stop()
    assert [ln.text for ln in seen] == ["[2026-11-29 10:00:00 TP0] Load weight begin. avail mem=93.21 GB"]
    assert snap.state is State.STARTING and snap.phase == "loading weights"
    assert any(n.kind == "replayed" and f"printed {crash.count(chr(10))} lines" in n.message for n in notices)


def test_the_dashboards_copy_of_a_commands_output_holds_each_line_at_its_offset(tmp_path: Path) -> None:
    """The log pane reads lines that left its memory back from a file by offset: for a command that file is
    the session's copy of the output (replays and all), removed when the session closes."""
    from symmtui.session.messages import EngineBatch, SessionMessage
    from tests.ui.kit import watched

    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "1.log").write_bytes(READY_LOG.read_bytes())
    (runs / "2.log").write_bytes(b"\x1b[33mWARNING\x1b[0m a new line after the restart\n")
    batches: list[EngineBatch] = []

    def post(m: SessionMessage) -> None:
        if isinstance(m, EngineBatch):
            batches.append(m)

    import symmtui.logs.logcmd as logcmd

    session = watched(writer("--runs", str(runs), "--exit", "0"), observe=post, spool_log_commands=True)
    engine = session.head.engine
    assert engine is not None
    follower = engine._follower
    assert isinstance(follower, CommandFollower)
    follower.backoff = Backoff(first=0.02, cap=0.02)
    deadline = time.monotonic() + 10
    while not any("a new line after" in ln.plain for b in batches for ln in b.lines) and time.monotonic() < deadline:
        time.sleep(0.02)
    follower.backoff = Backoff(first=30, cap=30)
    spool = Path(batches[-1].log_path or "")
    assert spool.name.startswith(logcmd.SPOOL_PREFIX) and spool.parent.name == "logcmd"
    data = spool.read_bytes()
    lines = [ln for b in batches for ln in b.lines if not ln.progress]
    assert len(lines) == READY_LOG.read_text().count("\n") + 1  # the replay is not shown twice ...
    for ln in lines:  # ... but every shown line is in the copy at its offset
        raw = data[ln.offset:data.index(b"\n", ln.offset)]
        assert raw.decode("utf-8", "replace").rstrip("\r").endswith(ln.text.split("\r")[-1])
    session.close()
    assert not spool.exists()
