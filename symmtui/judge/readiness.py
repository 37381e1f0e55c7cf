"""The readiness verdict: a pure state machine over events, probe results, process exits and a clock.

| from | evidence | to |
|---|---|---|
| WAITING | any log line | STARTING |
| STARTING | no line and no progress for ``stall`` s (the process, if watched, alive) | STALLED |
| STALLED | a line | STARTING |
| WAITING, STARTING, STALLED | a ready marker (and health, when a URL is configured), a 200 from the health probe, or a request served (``judge.dialects``) | READY |
| WAITING, STARTING, STALLED | a crash event, or the watched process gone | CRASHED |
| WAITING, STARTING, STALLED | ``timeout`` s since the start | TIMED OUT |
| any but a verdict | the user stops watching | STOPPED |
| READY | a crash event of a worker process (a rank's, an engine core's, an announced scheduler's traceback), a death any process can print (catalogue/25-deaths.toml: C++ ``terminate called``, a Go or Rust panic, a fatal signal's report, ``Fatal Python error``, a native CUDA error, ggml's and glog's aborts, the shell's ``Segmentation fault`` / ``Killed``), another "fatal" catalogue entry (a wrapper that says the server is going down), or the watched process gone with a non-stop code | CRASHED (``ready_after``: how long after READY) |
| READY | the watched process ended by SIGTERM/SIGINT/exit 0, or by a stop we asked for | STOPPED |
| CRASHED, TIMED OUT, STOPPED | (nothing but a new launch in the same log) | (the same) |
| any | a new launch appended to the same log (``new_run``) | WAITING, as run N+1 |

Other crash events after READY (a request's traceback in the API server) are recorded as errors; the
server may well be serving. The cause of a crash is the first crash event (the earliest fatal record),
replaced by the first primary error printed after it when it is a wrapper (a child failed, the process
ended, a cut traceback); after READY a wrapper or generic crash is caused by the latest error logged.
"""

from __future__ import annotations

import math
import signal
from collections import deque
from collections.abc import Iterable
from enum import StrEnum

from msgspec import Struct
from msgspec.structs import force_setattr, replace

from symmtui.errors import UserError
from symmtui.judge.events import PROCESS_EXIT, Event
from symmtui.judge.rules import PHASE_ORDER, PHASE_READY, PHASE_STARTING, Kind
from symmtui.judge.timeouts import DEFAULT_STALL as DEFAULT_STALL  # re-exported: the limits live there
from symmtui.judge.timeouts import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT

READY_WAITING_HEALTH = "ready marker seen, waiting for health"
# Roles (from the catalogue) the verdict reads: a "wrapper" crash points at an earlier or later primary
# error, which is named as the cause; after READY a logged traceback is recorded but the server may
# well be serving: only "fatal" crashes (and the process's exit) end it.


def _wrapper(event: Event) -> bool:
    return "wrapper" in event.roles


def _stop_codes() -> frozenset[int]:
    """How a server ends when asked to: exit 0, SIGTERM/SIGINT, or a shell's report of a child ended by
    them (128 + the signal: a server launched through `sh -c` / `bash -c`). (signal is imported at a
    process exit, not at every start.)"""
    return frozenset({0, -signal.SIGTERM, -signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGINT})


class State(StrEnum):
    """Where the bring-up stands."""

    WAITING = "waiting"
    STARTING = "starting"
    READY = "ready"
    CRASHED = "crashed"
    STALLED = "stalled"
    TIMED_OUT = "timed out"
    STOPPED = "stopped"

    @property
    def final(self) -> bool:
        """A verdict that ``wait`` reports and exits on (STALLED is not: it keeps waiting)."""
        return self in (State.READY, State.CRASHED, State.TIMED_OUT, State.STOPPED)



class ReadinessConfig(Struct, frozen=True):
    """Limits and evidence. ``timeout``/``stall`` in seconds (None or 0: never). ``need_probe``: a URL is
    configured, so a log ready marker alone is not READY. ``has_pid``: a process is watched (stall
    then needs it alive)."""

    timeout: float | None = DEFAULT_TIMEOUT
    stall: float | None = DEFAULT_STALL
    need_probe: bool = False
    has_pid: bool = False
    last_lines: int = 20

    def __post_init__(self) -> None:
        for name in ("timeout", "stall"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value < 0:
                raise UserError(f"{name} must be a positive number of seconds (0: never), not {value!r}")
            if value == 0 or math.isinf(value):
                force_setattr(self, name, None)  # 0 (as in a profile) means no limit
        if self.last_lines < 0:
            raise UserError(f"last_lines must be >= 0, not {self.last_lines}")


class PhaseSpan(Struct, frozen=True):
    """One phase of the bring-up. ``start``/``end`` are seconds since the start of watching;
    ``log_start``/``log_end`` the log's own timestamps (epoch seconds) when the lines had them."""

    name: str
    start: float
    end: float | None = None
    log_start: float | None = None
    log_end: float | None = None

    def duration(self, now: float | None = None) -> float | None:
        """Seconds spent in this phase: from log timestamps when both ends have them, else the clock."""
        if self.log_start is not None and self.log_end is not None:
            return max(0.0, self.log_end - self.log_start)
        end = self.end if self.end is not None else now
        return None if end is None else max(0.0, end - self.start)


class Snapshot(Struct, frozen=True):
    """Everything a reader needs to show the bring-up (immutable; safe to hand across threads)."""

    state: State
    phase: str | None
    progress: float | None
    elapsed: float
    started_at: float
    cause: Event | None
    phases: tuple[PhaseSpan, ...]
    errors: tuple[Event, ...]
    warnings: tuple[Event, ...]
    last_lines: tuple[str, ...]
    remaining_timeout: float | None
    detail: str = ""
    progress_counts: tuple[int, int] | None = None
    verdict_elapsed: float | None = None
    since_activity: float | None = None
    marker_seen: bool = False
    probe_ok: bool | None = None
    probe_detail: str | None = None
    process_detail: str | None = None
    log_span: float | None = None
    run: int = 1
    ready_after: float | None = None
    """CRASHED or STOPPED after it had been READY: how many seconds after (log times where both have them)."""


def describe_exit(returncode: int | None) -> str:
    """``process exited with code 1`` / ``process killed by signal 9 (SIGKILL)`` / unknown."""
    if returncode is None:
        return "process exited (exit code unknown: it is not our child)"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "?"
        return f"process killed by signal {-returncode} ({name})"
    return f"process exited with code {returncode}"


class Readiness:
    """Feed it evidence with the time it arrived (monotonic seconds); ask it for a Snapshot."""

    def __init__(self, config: ReadinessConfig | None = None, start: float = 0.0) -> None:
        self.config = config if config is not None else ReadinessConfig()
        self.restart(start)

    # ------------------------------------------------------------------ evidence
    def restart(self, now: float) -> None:
        """Forget everything and start the clock again (a relaunch)."""
        self._start = now
        self._run = 1
        self._new_run()

    def _new_run(self) -> None:
        self._state = State.WAITING
        self._phase: str | None = None
        self._progress: tuple[int, int] | None = None
        self._spans: list[PhaseSpan] = []
        self._cause: Event | None = None
        self._errors: dict[str, Event] = {}
        self._warnings: dict[str, Event] = {}
        self._lines: deque[str] = deque(maxlen=self.config.last_lines)
        self._live: str | None = None
        self._last_activity: float | None = None
        self._marker: Event | None = None
        self._probe_ok: bool | None = None
        self._probe_detail: str | None = None
        self._alive: bool | None = None
        self._process_detail: str | None = None
        self._verdict_at: float | None = None
        self._first_ts: float | None = None
        self._log_now: float | None = None  # the log's clock: the latest stamp of the run (see _log_time)
        self._verdict_ts: float | None = None
        self._ready_at: float | None = None  # (clock, log time) when it became READY
        self._ready_ts: float | None = None
        self._ready_after: float | None = None
        self._detail = "no log line yet"

    def feed_activity(self, now: float, lines: Iterable[str] = (), live: str | None = None) -> None:
        """New log lines arrived (any line counts as activity).

        ``live`` is the current text of the unfinished last line (a carriage-return progress update):
        it is shown after ``lines`` in ``last_lines``, replaced by the next update, and dropped when
        finished lines arrive without one (the finished line is among them).
        """
        added = list(lines)
        if added:
            self._lines.extend(added)
            self._live = live
        elif live is not None:
            self._live = live
        self._touch(now)

    def feed(self, event: Event, now: float) -> None:
        """A log event (new, or an update of an earlier one with the same key).

        A server's first line (``server_args=ServerArgs(`` / ``vLLM API server version``) after an
        earlier run got going means the log holds another launch appended to it: the state starts
        over for that run (``snapshot().run`` counts them), so an old READY or crash is not reported
        for the new launch.
        """
        if "new_run" in event.roles and self._state is not State.WAITING and (
            self._state.final or (self._phase not in (None, PHASE_STARTING))
        ):
            keep_alive, keep_detail = (self._alive, self._process_detail), self._probe_detail
            self._run += 1
            self._new_run()  # an earlier 200 answered for the old launch: wait for a fresh one
            self._alive, self._process_detail = keep_alive
            self._probe_detail = keep_detail
        ts = self._log_time(event.ts)
        if ts is not None and self._first_ts is None:
            self._first_ts = ts
        if event.kind is Kind.CRASH:
            self._on_crash(event, now, ts=ts)
            return
        if event.kind is Kind.WARNING:
            self._warnings[event.key or event.summary] = event
            return
        if self._state in (State.CRASHED, State.TIMED_OUT, State.STOPPED):
            return
        self._touch(now)
        if self._state is State.READY:
            if event.kind is Kind.READY:
                self._marker = self._marker or event
            return  # after READY a phase or a served request says nothing new (its time is not the verdict's)
        if event.kind is Kind.READY:
            self._marker = event
            if self.config.need_probe and not self._probe_ok:
                self._enter_phase(READY_WAITING_HEALTH, now, ts, force=True)
                self._detail = READY_WAITING_HEALTH
            else:
                self._become_ready(now, ts, "log says ready: " + event.summary)
            return
        if event.ends is not None:
            self._end_phase(event.ends, now, ts)
        if event.phase is not None:
            self._enter_phase(event.phase, now, ts)
        if event.kind is Kind.PROGRESS and event.progress is not None and event.phase in (self._phase, None):
            self._progress = event.progress

    def feed_probe(self, ok: bool, detail: str, now: float) -> None:
        """An HTTP probe result: ok means the endpoint answered 200."""
        self._probe_ok = ok
        self._probe_detail = detail
        if ok and self._state not in (State.CRASHED, State.TIMED_OUT, State.STOPPED, State.READY):
            self._become_ready(now, None, "health check answered: " + detail)

    def feed_process(self, alive: bool, returncode: int | None, now: float) -> None:
        """The watched process: alive, or gone with ``returncode`` (negative: killed by that signal)."""
        self._alive = alive
        if alive:
            self._process_detail = "process running"
            return
        text = describe_exit(returncode)
        self._process_detail = text
        if self._state in (State.CRASHED, State.TIMED_OUT, State.STOPPED):
            return
        if self._state is State.READY and returncode in _stop_codes():
            self._after_ready(now, None)
            self._state = State.STOPPED
            self._detail = text
            return
        when = "before it was ready" if self._state is not State.READY else "after it was ready"
        ev = Event(Kind.CRASH, PROCESS_EXIT, f"{text} {when}", 0, text, key=PROCESS_EXIT,
                   roles=frozenset({"wrapper"}))
        self._on_crash(ev, now, force=True)

    def mark_stopped(self, now: float, reason: str = "stopped by the user", *, ended: bool = False) -> None:
        """The user stopped watching: STOPPED, unless a verdict is already in. ``ended``: the server itself was
        stopped on purpose (a stop or a relaunch we asked for): STOPPED from READY too."""
        if self._state is State.READY and ended:
            self._after_ready(now, None)
        elif self._state.final:
            return
        self._state = State.STOPPED
        self._detail = reason
        self._verdict_at = now - self._start

    def tick(self, now: float) -> State:
        """Apply the clock (stall, timeout) and return the state."""
        self._advance(now)
        return self._state

    def due_in(self, now: float) -> float | None:
        """Seconds from ``now`` until the clock alone changes the state (the timeout, or a stall of a
        starting server); None when nothing is due. A caller that ticks can sleep this long, no longer."""
        if self._state.final:
            return None
        dues: list[float] = []
        if self.config.timeout is not None:
            dues.append(self._start + self.config.timeout - now)
        stall = self.config.stall
        if (stall is not None and self._state is State.STARTING and self._last_activity is not None
                and self._alive is not False):
            dues.append(self._last_activity + stall - now)
        ahead = [d for d in dues if d > 0]
        return min(ahead) if ahead else None

    # ------------------------------------------------------------------ reading
    @property
    def state(self) -> State:
        """The state as of the last feed/tick."""
        return self._state

    def snapshot(self, now: float) -> Snapshot:
        """The state at ``now`` (applies stall/timeout first)."""
        self._advance(now)
        elapsed = max(0.0, now - self._start)
        timeout = self.config.timeout
        remaining = None if timeout is None else max(0.0, timeout - elapsed)
        progress = None
        if self._progress is not None and self._progress[1] > 0:
            progress = min(1.0, self._progress[0] / self._progress[1])
        spans = tuple(self._spans)
        last_lines = tuple(self._lines)
        if self._live is not None and self.config.last_lines:
            last_lines = (*last_lines, self._live)[-self.config.last_lines :]
        log_span = None
        if self._verdict_ts is not None and self._first_ts is not None:
            log_span = max(0.0, self._verdict_ts - self._first_ts)
        return Snapshot(
            state=self._state,
            phase=self._phase,
            progress=progress,
            elapsed=elapsed,
            started_at=self._start,
            cause=self._cause,
            phases=spans,
            errors=tuple(self._errors.values()),
            warnings=tuple(self._warnings.values()),
            last_lines=last_lines,
            remaining_timeout=remaining,
            detail=self._detail,
            progress_counts=self._progress,
            verdict_elapsed=self._verdict_at,
            since_activity=None if self._last_activity is None else max(0.0, now - self._last_activity),
            marker_seen=self._marker is not None,
            probe_ok=self._probe_ok,
            probe_detail=self._probe_detail,
            process_detail=self._process_detail,
            log_span=log_span,
            run=self._run,
            ready_after=self._ready_after,
        )

    # ------------------------------------------------------------------ internals
    def _touch(self, now: float) -> None:
        self._last_activity = now
        if self._state is State.WAITING:
            self._state = State.STARTING
            self._detail = "starting"
        elif self._state is State.STALLED:
            self._state = State.STARTING
            self._detail = "moving again"

    def _advance(self, now: float) -> None:
        if self._state in (State.READY, State.CRASHED, State.TIMED_OUT, State.STOPPED):
            return
        elapsed = now - self._start
        timeout = self.config.timeout
        if timeout is not None and elapsed >= timeout:
            self._state = State.TIMED_OUT
            self._verdict_at = timeout
            self._detail = f"no verdict within {timeout:g} s"
            return
        stall = self.config.stall
        if (
            stall is not None
            and self._state is State.STARTING
            and self._last_activity is not None
            and now - self._last_activity >= stall
            and (self._alive is not False)
        ):
            self._state = State.STALLED
            self._detail = f"no new line and no progress for {now - self._last_activity:.0f} s"

    def _become_ready(self, now: float, ts: float | None, detail: str) -> None:
        self._end_phase(self._phase, now, ts)
        self._enter_phase(PHASE_READY, now, ts, force=True)
        self._end_phase(PHASE_READY, now, ts)
        self._state = State.READY
        self._detail = detail
        self._verdict_at = now - self._start
        self._verdict_ts = ts
        self._ready_at, self._ready_ts = now, ts
        self._progress = None

    def _after_ready(self, now: float, ts: float | None) -> None:
        """Leaving READY (a crash, a stop): how long after it, in log time where both ends have a stamp."""
        if self._ready_ts is not None and ts is not None:
            self._ready_after = max(0.0, ts - self._ready_ts)
        elif self._ready_at is not None:
            self._ready_after = max(0.0, now - self._ready_at)

    def _log_time(self, ts: float | None) -> float | None:
        """The log's clock at a record stamped ``ts``: one clock per run, that never goes backwards (a stamp earlier
        than the latest counts as the latest: a log whose stamps repeat or jump back makes no negative duration)."""
        if ts is None:
            return None
        if self._log_now is not None and ts < self._log_now:
            return self._log_now
        self._log_now = ts
        return ts

    def _on_crash(self, event: Event, now: float, *, force: bool = False, ts: float | None = None) -> None:
        key = event.key or event.summary
        self._errors[key] = event
        cause = self._cause
        if cause is not None:
            if (cause.key or cause.summary) == key:
                self._cause = event  # the same error seen on more ranks, or grown by its detail lines
            elif _wrapper(cause) and not _wrapper(event):
                self._cause = event  # the root cause printed after its wrapper
            return
        if self._state in (State.TIMED_OUT, State.STOPPED):
            return
        after_ready = self._state is State.READY
        if after_ready and not force:
            if "fatal" not in event.roles:
                return
        self._cause = self._root(event, after_ready)
        if after_ready:
            self._after_ready(now, ts)
        self._state = State.CRASHED
        self._verdict_at = now - self._start
        self._verdict_ts = ts
        self._detail = self._cause.headline()
        if self._spans and self._spans[-1].end is None:
            self._end_phase(self._spans[-1].name, now, ts)

    def _root(self, event: Event, after_ready: bool) -> Event:
        """The cause of the crash ``event`` ends the run with: itself, unless it is a wrapper or generic crash
        after READY, whose cause is the latest error logged meanwhile (a traceback that alone did not end the
        server). Before READY every crash event ends the run at once, so nothing came before it; a wrapper
        cause is replaced by the first primary error printed after it (``_on_crash``)."""
        if after_ready and (_wrapper(event) or "generic" in event.roles):
            primary = [e for e in self._errors.values() if not _wrapper(e) and e.key != event.key]
            if primary:
                return primary[-1]
        return event

    def _enter_phase(self, name: str, now: float, ts: float | None, *, force: bool = False) -> None:
        if name == self._phase:
            return
        if not force and self._phase in PHASE_ORDER and name in PHASE_ORDER:
            if PHASE_ORDER.index(name) < PHASE_ORDER.index(self._phase):
                return  # a lagging rank's earlier marker: the bring-up does not go backwards
        if self._spans and self._spans[-1].end is None:
            last = self._spans[-1]
            self._spans[-1] = replace(last, end=now - self._start, log_end=ts if ts is not None else last.log_end)
        self._spans.append(PhaseSpan(name, now - self._start, None, ts))
        self._phase = name
        self._progress = None
        if self._state is State.STARTING:
            self._detail = name

    def _end_phase(self, name: str | None, now: float, ts: float | None) -> None:
        if name is None:
            return
        for i in range(len(self._spans) - 1, -1, -1):
            span = self._spans[i]
            if span.name == name:
                if span.end is None:
                    self._spans[i] = replace(span, end=now - self._start, log_end=ts)
                return
