"""Bringup: the follower, the event builder, the readiness machine, the probe and a pid watch, in threads."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct, field
from msgspec.structs import replace

from symmtui import boundary
from symmtui.bringup.lastrun import last_launch_attach
from symmtui.judge.events import PROCESS_EXIT, Event, EventBuilder
from symmtui.judge.logclock import LogTimes
from symmtui.judge.ranks import RankBoard, RankSummary
from symmtui.judge.readiness import Readiness, ReadinessConfig, Snapshot, State
from symmtui.judge.rules import Kind, RuleSet
from symmtui.logs.follow import FileNotice, LogFollower, LogLine, Numbering
from symmtui.logs.lineparts import may_name_a_source, record_source, split_prefix, split_records
from symmtui.proc.pidwatch import ProcRef

if TYPE_CHECKING:  # imported where used: the prober (HTTP, ssl, a thread pool) for a URL, the log
    # command's follower (subprocess, pipes) for a command, the last launch's start for last_launch
    from typing_extensions import TypeIs  # typing's own from Python 3.13

    from symmtui.bringup.probe import HttpProbe, ProbeResult
    from symmtui.logs.logcmd import CommandFollower, LogCommand, ReplayFilter


def is_log_command(value: object) -> TypeIs[LogCommand]:
    """``isinstance(value, LogCommand)`` without importing logs.logcmd: until something imported it,
    no LogCommand exists."""
    module = sys.modules.get("symmtui.logs.logcmd")
    return module is not None and isinstance(value, module.LogCommand)


UPDATE_INTERVAL = 0.05  # at most ~20 updates a second, except on a verdict change
IDLE_TICK = 0.25  # with nothing pending, the dispatcher looks at the clock this often ...
MIN_TICK = 0.005  # ... or when a timeout or stall falls due (never a busy loop)
MAX_PENDING_LINES = 100_000  # lines kept for a slow on_update; older ones are dropped (counted)
QUIET_FLUSH = 2.0  # an open traceback with no new line for this long is closed as it is
MAX_REPLAY_EVENTS = 50_000
PID_SETTLE = 0.5  # after the process is gone, wait this long at most for its last log lines
STOP_JOIN = 1.0  # seconds a stop waits for each of a generation's threads (a follower mid-match is left)
HEARTBEAT = 1.0  # with nothing new, an update this often all the same: readers show the time passing
PROBE_HOLD = 10.0  # a health check's READY waits at most this long for the log judged up to where it was then
SETTLE_QUIET = 0.2  # after a crash, the log quiet this long (other ranks' copies arrive within ms) ...
SETTLE_MAX = 1.0  # ... or this long since its cause last gained a copy: the crash is settled (printed, notified)
SETTLE_CAP = 3.0  # ... and at the latest this long after the crash, whatever still arrives
STAMP_LOOK = 8  # lines looked at, from a batch's end, for the log's latest timestamp
CHUNK_BYTES = 64 << 10  # lines are judged in chunks of about this much text, the verdict updated after each ...
SLOW_CHUNK = 0.1  # ... and one line at a time for the rest of a batch once a chunk took this long (a user
# pattern costly on long lines: RE2 is linear in the line, but ``(?P<x>.*a){1000}z`` takes ~5 s on 64 KiB)


class EngineUpdate(Struct, frozen=True):
    """One coalesced batch for readers: new lines, new/updated events, file notices, and the state."""

    lines: tuple[LogLine, ...]
    events: tuple[Event, ...]
    notices: tuple[FileNotice, ...]
    snapshot: Snapshot
    dropped_lines: int = 0
    generation: int = 0
    ranks: RankSummary | None = None
    """Who is behind, for a log whose lines name their rank (None otherwise): judge.ranks."""
    caught_up: bool = True
    """Everything the log held when it was opened has been judged: a READY now is not overtaken by an older
    line still unread (a crash after READY in a finished log). A log command is always caught up."""
    settled: bool = True
    """Not CRASHED, or CRASHED and the other ranks' copies of the error had their moment to arrive: the log
    read to its end and quiet for SETTLE_QUIET (a file nobody writes to any more: at once), or SETTLE_MAX
    since the cause last gained a copy (another rank's), or SETTLE_CAP since the crash."""
    settle_waited: float = 0.0
    """Seconds since the crash (0 when not CRASHED)."""
    times: LogTimes | None = None
    """The log's own clock: its first and latest timestamps, and when the latest arrived (this engine's clock)."""


class _Pending(Struct):
    lines: list[LogLine] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    notices: list[FileNotice] = field(default_factory=list)
    dropped: int = 0

    def empty(self) -> bool:
        return not (self.lines or self.events or self.notices or self.dropped)


class Bringup:
    """Watch one bring-up: ``start()``, read ``snapshot()`` or receive ``on_update`` batches, ``stop()``.

    ``tail_lines``: attach at the last N lines (the display gets those at once) and scan the earlier
    part in a background thread; None reads the file in order, from the start of its last launch when
    ``last_launch`` (an existing log over a few MB: found by reading backwards, see bringup.lastrun; the
    part before is not judged, an "attached" notice says so), else from its start. ``new_only``: judge
    only lines written after start. ``on_update`` is called from one engine thread, at most ~20 times a second,
    and at once when the state changes.

    ``log_path`` may be a ``LogCommand`` instead of a file: its output is the log (``logs.logcmd``:
    restarted with backoff when it exits). ``tail_lines`` and ``last_launch`` do not apply to it (the
    command decides what it replays); ``new_only`` skips, after a ``restart``, the lines the command
    prints again that the previous generation had shown (a first start has nothing to compare with).
    ``log_spool``: a file that gets a copy of the command's output (``CommandFollower(spool=)``), for a
    reader of old lines by offset (the dashboard's log pane).
    """

    def __init__(
        self,
        log_path: str | os.PathLike[str] | LogCommand | None,
        *,
        ruleset: RuleSet | None = None,
        config: ReadinessConfig | None = None,
        url: str | None = None,
        pid: int | None = None,
        new_only: bool = False,
        tail_lines: int | None = None,
        last_launch: bool = True,
        on_update: Callable[[EngineUpdate], None] | None = None,
        probe_timeout: float = 2.0,
        probe_interval: tuple[float, float] = (0.25, 5.0),
        clock: Callable[[], float] = time.monotonic,
        exit_reason: Callable[[int | None], str | None] | None = None,
        log_spool: str | os.PathLike[str] | None = None,
    ) -> None:
        self.log_spool = log_spool
        self.ruleset = ruleset if ruleset is not None else RuleSet()
        base = config if config is not None else ReadinessConfig()
        self.config = replace(base, need_probe=url is not None and log_path is not None, has_pid=pid is not None)
        self.source: Path | LogCommand | None = log_path if is_log_command(log_path) or log_path is None \
            else Path(log_path)
        """What is followed: a log file, a command whose output is the log, or nothing (a URL, a pid)."""
        self.url = url
        self.pid = pid
        self.new_only = new_only
        self.tail_lines = tail_lines
        self.last_launch = last_launch
        self.on_update = on_update
        self.probe_timeout = probe_timeout
        self.probe_interval = probe_interval
        self.exit_reason = exit_reason
        """Asked when the watched pid exits: a reason (e.g. "stopped by symmtui stop") makes it STOPPED."""
        self._clock = clock
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        # The event builder's state. Lines are matched holding this one only, never the lock the verdict is
        # judged under: a timeout, a stall, a stop or a heartbeat never waits on a pattern (RE2 lets go of the
        # GIL while it matches, so the deadline and signals hold whatever the user's patterns cost).
        # Order: _feeding before _lock.
        self._feeding = threading.Lock()
        self._builder = EventBuilder(self.ruleset, thin_serving=True)
        self._readiness = Readiness(self.config, clock())
        self._pending = _Pending()
        self._urgent = False
        self._generation = 0
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()  # the whole engine
        self._gen_stop = threading.Event()  # the current generation's watchers
        self._started = False
        self._last_line_at: float | None = None
        self._tail: LogLine | None = None  # the unfinished line the log ended in when opened (see _dispatch_loop)
        self._ranks = RankBoard()
        self._replay: list[Event] = []
        self._probe: HttpProbe | None = None
        # a health check that answered while the log was not read to its end: (its detail, the log's size then,
        # when); it counts once the log is read that far (the phases it went through judged first) or PROBE_HOLD on
        self._probe_held: tuple[str, int, float] | None = None
        self._judged_to = 0  # the log file's offset up to which its lines are judged (the follower's thread sets it)
        self._follower: LogFollower | CommandFollower | None = None
        self._seen: ReplayFilter | None = None  # the last command generation's lines, for a new_only restart
        self._numbering = Numbering()
        self._last_emit = 0.0
        self._last_state = State.WAITING
        self._dispatcher: threading.Thread | None = None
        self._caught_up = not isinstance(self.source, Path)  # a log command streams: always caught up (see EngineUpdate)
        self._crash_at: float | None = None  # when the state became CRASHED (the settle's start)
        self._copy: tuple[str, int] | None = None  # the cause's key and copies when last looked at ...
        self._copy_at = 0.0  # ... and when it last gained one
        self._settled = True
        self._times = LogTimes(None, None, None)

    # ------------------------------------------------------------------ public
    def start(self) -> None:
        """Start the threads (idempotent)."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self._readiness.restart(self._clock())
            self._urgent = True  # readers get a first snapshot at once
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="symmtui-engine", daemon=True)
        self._dispatcher.start()
        self._start_generation()

    def stop(self, reason: str = "stopped watching") -> None:
        """Stop every thread (a last update carries STOPPED unless a verdict was already in)."""
        with self._lock:
            if not self._started or self._stop.is_set():
                return
            self._readiness.mark_stopped(self._clock(), reason)
            self._urgent = True
            self._wake.notify_all()
        self._stop_generation()
        with self._lock:
            self._stop.set()
            self._wake.notify_all()
        if self._dispatcher is not None and self._dispatcher is not threading.current_thread():
            self._dispatcher.join(timeout=10)  # (from inside on_update it ends right after the callback)

    def restart(self, log_path: str | os.PathLike[str] | LogCommand | None = None, pid: int | None = None,
                *, new_only: bool | None = None) -> None:
        """Reset the clock and the state for a relaunch; follow ``log_path`` (default: the same path
        or command).

        ``new_only`` None means: a different path (or command) is read from its start, the same path
        only from what is written after this call (the same command: without the lines it prints
        again).
        """
        self._stop_generation()
        with self._feeding, self._lock:  # a batch still being matched ends at its next chunk (its generation is gone)
            old = self.source
            new: Path | LogCommand | None
            if log_path is None:
                new = old
            elif is_log_command(log_path):
                new = log_path
            else:
                new = Path(log_path)
            if new_only is None:
                new_only = new == old and new is not None
            self.source = new
            self.pid = pid
            self.new_only = new_only
            self.config = replace(self.config, need_probe=self.url is not None and new is not None,
                                  has_pid=pid is not None)
            self._readiness = Readiness(self.config, self._clock())
            self._builder = EventBuilder(self.ruleset, thin_serving=True)
            self._ranks.reset()
            self._pending = _Pending()
            self._caught_up = not isinstance(self.source, Path)
            self._replay = []
            self._probe_held = None
            self._judged_to = 0
            self._last_line_at = None
            self._tail = None
            self._crash_at, self._settled, self._times, self._copy = None, True, LogTimes(None, None, None), None
            self._generation += 1
            self._urgent = True
            self._wake.notify_all()
        if self._started and not self._stop.is_set():
            self._start_generation()

    def snapshot(self) -> Snapshot:
        """The state now."""
        with self._lock:
            return self._readiness.snapshot(self._clock())

    def wait_final(self, timeout: float | None = None) -> Snapshot:
        """Block until the state is final (READY/CRASHED/TIMED_OUT/STOPPED) or ``timeout``; the snapshot."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._lock:
            while True:
                snap = self._readiness.snapshot(self._clock())
                if snap.state.final:
                    return snap
                left = 0.5 if deadline is None else min(0.5, deadline - self._clock())
                if left <= 0:
                    return snap
                self._wake.wait(left)

    def numbering(self) -> Numbering:
        """How the line numbers of events map to the file's (attached partway into a big log, the lines
        before are counted in the background: ``numbering().label(no, timeout)``)."""
        with self._lock:
            follower = self._follower
        return follower.numbering() if follower is not None else self._numbering

    @property
    def caught_up(self) -> bool:
        """Whether what the log held when it was opened has all been judged (see EngineUpdate.caught_up)."""
        with self._lock:
            return self._caught_up

    @property
    def generation(self) -> int:
        """Increments on every restart (updates carry it, so readers can drop stale batches)."""
        return self._generation

    # ------------------------------------------------------------------ generations
    def _start_generation(self) -> None:
        self._gen_stop = threading.Event()
        stop = self._gen_stop
        gen = self._generation
        source = self.source
        if is_log_command(source):
            # subprocess, pipes: only a source read through a command
            from symmtui.logs.logcmd import CommandFollower

            seen = self._seen if self.new_only else None
            command = CommandFollower(source, replay=seen, spool=self.log_spool)
            self._follower = command
            self._spawn(self._follow_loop, command, stop, gen, threading.Event(), name="symmtui-follow")
        elif source is not None:
            tail = 0 if self.new_only else self.tail_lines
            attach = None
            if tail is None and self.last_launch:
                attach = last_launch_attach(self.ruleset)
            self._follower = LogFollower(source, tail_lines=tail, attach_at=attach)
            first = threading.Event()
            self._spawn(self._follow_loop, self._follower, stop, gen, first, name="symmtui-follow")
            if tail and not self.new_only:
                self._spawn(self._backfill_loop, self._follower, stop, gen, first, name="symmtui-backfill")
        if self.url is not None:
            from symmtui.bringup.probe import HttpProbe  # httpx (~50 ms): only a source with a health URL

            lo, hi = self.probe_interval
            self._probe = HttpProbe(self.url, self.probe_timeout, min_interval=lo, max_interval=hi)
            self._spawn(self._probe_loop, self._probe, stop, gen, name="symmtui-probe")
        if self.pid is not None:
            self._spawn(self._pid_loop, self.pid, stop, gen, name="symmtui-pid")

    def _spawn(self, target: Callable[..., None], *args: object, name: str) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._lock:
            self._threads.append(t)
        t.start()

    def _stop_generation(self) -> None:
        self._gen_stop.set()
        if isinstance(self._follower, LogFollower):
            self._follower.wake()  # blocked in inotify: look at the stop event now
        threads, self._threads = self._threads, []
        for t in threads:
            # a thread inside one long match of a user's pattern (RE2: bounded, but seconds on 64 KiB lines)
            # is left to end by itself (a daemon; its results are of a stopped generation): a verb's exit and
            # a signal never wait for it
            t.join(timeout=STOP_JOIN)
        if self._follower is not None:
            self._follower.close()
            self._numbering = self._follower.numbering()
            if not isinstance(self._follower, LogFollower):  # a CommandFollower: what it printed
                self._seen = self._follower.replay
            self._follower = None

    # ------------------------------------------------------------------ threads
    def _follow_loop(self, follower: LogFollower | CommandFollower, stop: threading.Event, gen: int,
                     first: threading.Event) -> None:
        def on_batch(items: list[LogLine | FileNotice]) -> None:
            self._on_items(items, gen, getattr(follower, "caught_up", True))
            first.set()

        follower.watch(stop, on_batch)

    def _backfill_loop(self, follower: LogFollower, stop: threading.Event, gen: int,
                       first: threading.Event) -> None:
        """Judge the part of the file before the tail, then replay the tail's events after it."""
        while not first.wait(0.1):
            if stop.is_set():
                return
        builder = EventBuilder(self.ruleset, thin_serving=True)
        history: list[Event] = []
        for batch in follower.backfill():
            for chunk in _chunks([ln for ln in batch if not ln.progress]):
                if stop.is_set():
                    return
                history.extend(builder.feed_many(chunk))
        history.extend(builder.flush())
        if not history:
            return
        with self._lock:
            if gen != self._generation or stop.is_set():
                return
            now = self._clock()
            old = self._readiness
            fresh = Readiness(self.config, old.snapshot(now).started_at)
            for ev in history:
                fresh.feed(ev, now)
            for ev in self._replay:
                fresh.feed(ev, now)
            snap = old.snapshot(now)
            fresh.feed_activity(now, snap.last_lines)
            if snap.probe_ok is not None:
                fresh.feed_probe(snap.probe_ok, snap.probe_detail or "", now)
            self._readiness = fresh
            self._pending.events.extend(e for e in history if e.kind in (Kind.CRASH, Kind.WARNING))
            self._urgent = True
            self._wake.notify_all()

    def _on_items(self, items: Iterable[LogLine | FileNotice], gen: int, caught_up: bool = True) -> None:
        """A follower's batch: matched in chunks outside the state lock (see ``_feeding``), each chunk's lines and
        events handed on under it; a stop or a restart ends the batch between two chunks."""
        with self._feeding:
            if gen != self._generation:
                return
            builder = self._builder
            run: list[LogLine] = []
            last: LogLine | None = None
            finished = False
            for item in items:
                if isinstance(item, FileNotice):
                    if not self._judge_run(builder, run, gen):
                        return
                    with self._lock:
                        if gen != self._generation:
                            return
                        self._pending.notices.append(item)
                    continue
                last = item
                if not item.progress:
                    run.append(item)
                    finished = True
                    continue
                if not self._judge_run(builder, run, gen):
                    return
                events = builder.feed_progress(item)
                if not self._hand_on([item], events, gen, live=item.text):
                    return
            if not self._judge_run(builder, run, gen):
                return
            with self._lock:
                if gen != self._generation:
                    return
                first_catch_up = caught_up and not self._caught_up
                if first_catch_up:
                    self._urgent = True  # a verdict held back until the backlog was judged may go out now
                if first_catch_up and last is not None and last.progress:
                    self._tail = last  # what the log held ends in an unfinished line: judged when the log stays quiet
                elif finished:
                    self._tail = None
                self._caught_up = caught_up  # only now: every line of the batch is judged
                follower = self._follower
                if isinstance(follower, LogFollower):  # (this thread polls it: its offset is this batch's end)
                    self._judged_to = follower.offset
                self._release_probe(self._clock())
                self._wake.notify_all()

    def _judge_run(self, builder: EventBuilder, run: list[LogLine], gen: int) -> bool:
        """Match ``run`` (finished lines) chunk by chunk and hand each on; False when the generation stopped or
        was replaced meanwhile (the rest is not judged). ``run`` is emptied."""
        ok = True
        for chunk in _chunks(run):
            ok = self._hand_on(chunk, builder.feed_many(chunk, part_of=len(run)), gen)
            if not ok:
                break
        run.clear()
        return ok

    def _hand_on(self, lines: list[LogLine], events: list[Event], gen: int, live: str | None = None) -> bool:
        """Lines just matched and their events, to the readers and the readiness machine (under the lock)."""
        with self._lock:
            if gen != self._generation or self._gen_stop.is_set():
                return False
            now = self._clock()
            pend = self._pending
            before = self._readiness.state
            pend.lines.extend(lines)
            if live is None:
                self._feed_ranks(lines, events, now)
            for ev in events:
                self._feed_event(ev, now)
            self._last_line_at = now
            self._stamp([ln.plain for ln in lines] if live is None else [], now)
            keep = self.config.last_lines
            texts = [] if live is not None else [ln.text for ln in lines[-keep:]] if keep else []
            self._readiness.feed_activity(now, texts, live)
            if len(pend.lines) > MAX_PENDING_LINES:
                cut = len(pend.lines) - MAX_PENDING_LINES
                del pend.lines[:cut]
                pend.dropped += cut
            if self._readiness.state is not before:
                self._urgent = True
            self._wake.notify_all()
        return True

    def _stamp(self, plains: list[str], now: float) -> None:
        """The log's clock from the lines' own stamps: the first one of this launch, the latest (never going back)."""
        first, last, seen = self._times.first, self._times.last, self._times.seen
        if first is None:
            first = next((ts for p in plains[:STAMP_LOOK] if (ts := split_prefix(p).ts) is not None), None)
        ts = next((ts for p in reversed(plains[-STAMP_LOOK:]) if (ts := split_prefix(p).ts) is not None), None)
        if ts is not None and (last is None or ts >= last):
            last, seen = ts, now
        self._times = LogTimes(first if first is not None else last, last, seen)

    def _at_end(self) -> tuple[bool, bool]:
        """(read to its end, nobody wrote to it for SETTLE_QUIET): a log command streams, so (True, False)."""
        if not isinstance(self.source, Path):
            return True, False
        try:
            st = os.stat(self.source)
        except OSError:
            return True, False
        read = self.numbering()
        return read.skipped + read.read_bytes >= st.st_size, time.time() - st.st_mtime >= SETTLE_QUIET

    def _settle(self, now: float, state: State) -> float | None:
        """Follow a crash's settling (see EngineUpdate.settled); seconds until it must be looked at again."""
        if state is not State.CRASHED:
            self._crash_at, self._settled = None, True
            return None
        if self._crash_at is None:
            self._crash_at, self._settled, self._copy = now, False, None
        if self._settled:
            return None
        cause = self._readiness.snapshot(now).cause
        copy = (cause.key, cause.count) if cause is not None else None
        if copy != self._copy:  # another rank's copy of the cause (or a first one): the wait starts over
            self._copy, self._copy_at = copy, now
        waited = now - self._crash_at
        since_copy = now - self._copy_at
        last = max(self._crash_at, self._last_line_at or self._crash_at)
        quiet = now - last
        if since_copy >= SETTLE_MAX or waited >= SETTLE_CAP:
            self._settled = True
        else:
            at_end, idle = self._at_end()
            self._settled = at_end and (idle or quiet >= SETTLE_QUIET)
        if self._settled:
            self._urgent = True
            return None
        due = min(SETTLE_MAX - since_copy, SETTLE_CAP - waited, SETTLE_QUIET - quiet if quiet < SETTLE_QUIET else SETTLE_QUIET)
        return max(MIN_TICK, due)

    def _feed_ranks(self, run: list[LogLine], events: list[Event], now: float) -> None:
        """Each record's rank (if it names one) gets its last line time, and the phase its event names (a
        physical line holding two ranks' records counts for both)."""
        marks = {(ev.line_no, ev.source): ev for ev in events if ev.phase or ev.ends}
        board = self._ranks
        for ln in run:
            plain = ln.plain
            if not may_name_a_source(plain):
                continue  # no record prefix that names a process (a traceback's frame, an unprefixed writer): no rank
            for rec in split_records(plain):
                ev = marks.get((ln.no, record_source(rec)[0])) if marks else None
                if ev is not None and "new_run" in ev.roles:
                    board.reset()  # a new launch appended to the same log
                board.feed(rec, now, ev.phase if ev else None, ev.ends if ev else None)

    def ranks(self) -> RankSummary | None:
        """Who is behind now (None for a log without rank prefixes)."""
        with self._lock:
            return self._ranks.summary(self._clock())

    def _feed_event(self, ev: Event, now: float) -> None:
        self._pending.events.append(ev)
        if ev.kind is Kind.CRASH and self.pid is not None and self.exit_reason is not None \
                and not self._readiness.state.final:
            stopped = self.exit_reason(None)  # error lines a server prints while being stopped on purpose
            if stopped is not None:
                self._readiness.mark_stopped(now, stopped, ended=True)
        self._readiness.feed(ev, now)
        replay = self._replay
        if ev.kind is Kind.PROGRESS and replay and replay[-1].kind is Kind.PROGRESS:
            replay[-1] = ev  # only the latest progress matters for a replay
        elif len(replay) < MAX_REPLAY_EVENTS:
            replay.append(ev)
        if ev.kind is Kind.READY and self._probe is not None:
            self._probe.kick()

    def _probe_loop(self, probe: HttpProbe, stop: threading.Event, gen: int) -> None:
        def on_result(res: ProbeResult) -> None:
            with self._lock:
                if gen != self._generation:
                    return
                if res.ok and self._probe_held is not None:
                    return  # one held already: it counts when the log is read (_release_probe)
                if res.ok and (size := self._unread_to()) is not None:
                    self._probe_held = (res.detail, size, self._clock())  # the log first
                    return
                self._probe_held = None
                self._feed_probe(res.ok, res.detail)

        probe.run(stop, on_result)

    def _feed_probe(self, ok: bool, detail: str) -> None:
        before = self._readiness.state
        self._readiness.feed_probe(ok, detail, self._clock())
        if self._readiness.state is not before:
            self._urgent = True
        self._wake.notify_all()

    def _unread_to(self) -> int | None:
        """The log file's size now when the follower has not read that far yet (else None). A server writes its
        log before its port answers: a READY from the health check while lines are still unread (a loaded host,
        a long backlog) would end the bring-up before the phases those lines tell of are judged."""
        follower = self._follower
        if not isinstance(follower, LogFollower):
            return None
        try:
            size = os.stat(follower.path).st_size
        except OSError:
            return None
        return size if self._judged_to < size else None

    def _release_probe(self, now: float) -> None:
        """(Under the lock.) A held health check counts once the log is read up to its size then, or PROBE_HOLD on."""
        held = self._probe_held
        if held is None:
            return
        if self._judged_to >= held[1] or now - held[2] >= PROBE_HOLD:
            self._probe_held = None
            self._feed_probe(True, held[0])

    def _pid_loop(self, pid: int, stop: threading.Event, gen: int) -> None:
        ref = ProcRef.open(pid)  # this process, by pid and start time: a reused pid is not it
        try:
            self._watch_process(ref, stop, gen)
        finally:
            ref.close()

    def _watch_process(self, ref: ProcRef, stop: threading.Event, gen: int) -> None:
        alive, code = ref.status()
        if alive:
            with self._lock:
                if gen == self._generation:
                    self._readiness.feed_process(True, None, self._clock())

        def on_exit(code: int | None) -> None:
            # Let the follower deliver what the process wrote last (its final error lines) first:
            # wait until the log has been quiet for a moment (at most PID_SETTLE seconds).
            t0 = self._clock()
            has_log = self.source is not None
            while not stop.is_set() and has_log and self._clock() - t0 < PID_SETTLE:
                last = self._last_line_at
                if last is not None and self._clock() - last >= 0.1 and self._clock() - t0 >= 0.1:
                    break
                stop.wait(0.05)
            stopped = self.exit_reason(code) if self.exit_reason is not None else None
            with self._feeding, self._lock:  # the lines being matched first: their traceback is the cause
                if gen != self._generation:
                    return
                now = self._clock()
                for ev in self._builder.flush():
                    self._feed_event(ev, now)
                before = self._readiness.state
                if stopped is not None:  # ended on purpose (symmtui stop): not a crash
                    self._readiness.mark_stopped(now, stopped, ended=True)
                else:
                    self._readiness.feed_process(False, code, now)
                    snap = self._readiness.snapshot(now)
                    if snap.cause is not None and snap.cause.rule_id == PROCESS_EXIT:
                        self._pending.events.append(snap.cause)
                if self._readiness.state is not before:
                    self._urgent = True
                self._wake.notify_all()

        if not alive:
            on_exit(code)
            return
        ref.watch(stop, on_exit)

    def _judge_tail(self) -> None:
        """The log ended (as it was when opened) in a line without its newline, and stayed quiet QUIET_FLUSH: that
        line is judged as scan judges it (a file of bare CR line ends is such a line, its last segment the visible
        one). Matched outside the verdict's lock, as every line is; not while a batch is being matched."""
        tail = self._tail
        if tail is None or not self._feeding.acquire(blocking=False):
            return
        try:
            with self._lock:
                if self._tail is not tail or self._last_line_at is None \
                        or self._clock() - self._last_line_at <= QUIET_FLUSH:
                    return
                self._tail, gen = None, self._generation
            line = tail._replace(progress=False)
            self._hand_on([line], self._builder.feed_many([line]), gen)
        finally:
            self._feeding.release()

    def _dispatch_loop(self) -> None:
        while True:
            self._judge_tail()
            with self._lock:
                now = self._clock()
                before = self._last_state
                self._release_probe(now)
                state = self._readiness.tick(now)
                if (self._last_line_at is not None and now - self._last_line_at > QUIET_FLUSH
                        and self._feeding.acquire(blocking=False)):  # (lines being matched: not quiet)
                    try:
                        if self._builder.in_block:
                            for ev in self._builder.flush():
                                self._feed_event(ev, now)
                            state = self._readiness.tick(now)
                    finally:
                        self._feeding.release()
                settle_due = self._settle(now, state)
                due = now - self._last_emit >= UPDATE_INTERVAL
                beat = now - self._last_emit >= HEARTBEAT
                send = self._urgent or state is not before or beat or (due and not self._pending.empty())
                update: EngineUpdate | None = None
                if send:
                    pend, self._pending = self._pending, _Pending()
                    waited = now - self._crash_at if self._crash_at is not None else 0.0
                    update = EngineUpdate(tuple(pend.lines), tuple(pend.events), tuple(pend.notices),
                                          self._readiness.snapshot(now), pend.dropped, self._generation,
                                          self._ranks.summary(now) if self._ranks else None, self._caught_up,
                                          self._settled, waited, self._times)
                    self._urgent = False
                    self._last_emit = now
                    self._last_state = state
                stopping = self._stop.is_set()
            if update is not None and self.on_update is not None:
                self.on_update(update)
            if stopping and update is None:
                return
            with self._lock:
                if self._stop.is_set() and not self._urgent and self._pending.empty():
                    return
                if not self._urgent:
                    wait = UPDATE_INTERVAL if not self._pending.empty() else IDLE_TICK
                    clock_due = self._readiness.due_in(self._clock())  # a timeout or stall falls due sooner
                    for at in (clock_due, settle_due):
                        if at is not None:
                            wait = max(MIN_TICK, min(wait, at))
                    self._wake.wait(wait)


def _chunks(lines: list[LogLine]) -> Iterator[list[LogLine]]:
    """``lines`` in runs of about CHUNK_BYTES of text; one line at a time once a run took SLOW_CHUNK to judge
    (the caller judges each before asking for the next: the time measured is its). The judging thread's own CPU
    time, not the wall's: on a loaded host a run waits for a core, and judging a backlog a line at a time then
    took 10x longer (a health check's READY held past PROBE_HOLD, its phases unread; a user pattern's cost is
    this thread's CPU, RE2 included)."""
    i, n, limit = 0, len(lines), CHUNK_BYTES
    while i < n:
        j, size = i + 1, len(lines[i].plain)
        while j < n and size + len(lines[j].plain) <= limit:
            size += len(lines[j].plain)
            j += 1
        boundary.give_way()
        started = time.thread_time()  # a cost, not a time the verdict depends on: not the injected clock
        yield lines[i:j]
        if time.thread_time() - started > SLOW_CHUNK:
            limit = 0
        i = j
