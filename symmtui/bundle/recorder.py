"""The bundle recorder: a Session observer that keeps what one node's bring-up showed and writes it at
each of its verdicts and on close.

``observe`` runs on the thread the Session gives this observer: it stamps the message with the time
and puts it on a queue of at most QUEUE_CAP messages (it waits while the queue is full; the Session's
inbox for this observer drops the oldest non-verdict message meanwhile: ``session.mailbox``). One
worker thread (``symmtui-bundle``) turns messages into the bundle's bounded records (see
``symmtui.bundle.format`` for the limits) and writes the file;
a second one captures the environment (``symmtui.launch.envinfo.capture``: a child interpreter, NVML)
so a slow torch import never delays a record. Everything kept passes ``symmtui.redact.redact`` once, as
it is recorded (a write then only encodes and compresses).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct
from msgspec.structs import replace

from symmtui import boundary, fsatomic
from symmtui.bundle import format as fmt
from symmtui.bundle import store
from symmtui.bundle.codec import encode
from symmtui.errors import UserError
from symmtui.judge.diagnose import event_json
from symmtui.judge.readiness import State
from symmtui.launch.envinfo import EnvInfo, ServerCommand, capture
from symmtui.redact import redact
from symmtui.session.messages import VERDICTS, EngineBatch, GpuRound, Notice, SessionMessage, TopologyRead

if TYPE_CHECKING:
    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.sampler import GpuSnapshot
    from symmtui.judge.board import Board, Said
    from symmtui.judge.events import Event
    from symmtui.judge.ranks import RankSummary
    from symmtui.judge.readiness import Snapshot
    from symmtui.judge.rules import RuleSet
    from symmtui.judge.verdict import Changes

ENV_WAIT_AT_CLOSE = 5.0  # seconds the final write waits for an environment capture still running
CLOSE_JOIN = 30.0  # the most close() waits for the worker's final write
QUEUE_CAP = 1024  # messages waiting for the worker
GPU_FIELDS = ("memory_used", "memory_reserved", "memory_free", "memory_total", "utilization_gpu",
              "utilization_memory", "temperature_c", "power_w", "pcie_gen", "pcie_width", "lost")
_CLOSE = object()


class _EnvReady(Struct, frozen=True):
    env: EnvInfo


def _na(value: Any) -> Any:
    return value if isinstance(value, int | float | bool | str) else None


def gpu_rows(snap: GpuSnapshot) -> list[list[Any]]:
    """One compact row per GPU (:data:`GPU_FIELDS` then its processes ``[pid, name, bytes]``); NA is null."""
    rows: list[list[Any]] = []
    for s in snap.samples:
        procs: Any = None
        if isinstance(s.processes, tuple):
            procs = [[p.pid, redact(p.name) if isinstance(p.name, str) else None, _na(p.used_memory)]
                     for p in s.processes]
        rows.append([_na(getattr(s, f)) for f in GPU_FIELDS] + [procs])
    return rows


def cause_json(said: Said | None) -> dict[str, Any] | None:
    """A cause as ``symmtui scan --json`` gives one: summary, headline, line, block, and the diagnosis the
    Board said (the Session's rules, port owner and patch state), plus where and the next step as a command."""
    if said is None:
        return None
    out = event_json(said.event, time=said.event.ts, diagnosis=said.diagnosis())
    out["where"] = said.where
    if out["diagnosis"] is not None:
        out["diagnosis"]["next"] = said.command
    return out


def changes_json(changes: Changes | None) -> dict[str, Any] | None:
    """What changed since the last READY launch as the verdict said it (replay shows it, never recomputes)."""
    return None if changes is None else {"since": changes.since, "lines": list(changes.lines)}


def phases_json(snap: Snapshot) -> list[dict[str, Any]]:
    """The snapshot's phases with start, end and duration (seconds since the launch started)."""
    out = []
    for span in snap.phases:
        end = span.end
        out.append({"name": span.name, "start": round(span.start, 3),
                    "end": None if end is None else round(end, 3),
                    "duration": None if end is None else round(end - span.start, 3)})
    return out


def _kept_line(t: float, g: int, no: int, offset: int, text: str) -> list[Any]:
    """A log line as the bundle keeps it: redacted, then cut past MAX_LINE_CHARS (marked)."""
    text = redact(text)
    if len(text) > fmt.MAX_LINE_CHARS:
        text = text[: fmt.MAX_LINE_CHARS] + " […cut]"
    return [t, g, no, offset, text]


def _kept_event(t: float, g: int, event: Event) -> list[Any]:
    """An event as the bundle keeps it: encoded, every string redacted."""
    return [t, g, redacted(encode(event))]


def _cleaned(records: list[list[Any] | tuple[Any, ...]] | deque[list[Any] | tuple[Any, ...]],
             clean: Callable[..., list[Any]]) -> list[list[Any]]:
    """``records`` with each one still as it came (a tuple) made clean, in place (once: later writes reuse it)."""
    done = [clean(*rec) if isinstance(rec, tuple) else rec for rec in records]
    records.clear()
    records.extend(done)
    return done


def _spread(items: list[Any], keep: float) -> list[Any]:
    """About ``keep`` of ``items``, evenly spread, the last always among them."""
    n = len(items)
    want = max(1, int(n * keep))
    if n <= want:
        return items
    step = n / want
    picked = [items[int(i * step)] for i in range(want - 1)]
    return [*picked, items[-1]]


def _steady(board: Board) -> tuple[Any, ...]:
    """What a Board says, without the time passing (elapsed, time left, the ETA, the last lines)."""
    return (board.state, board.node, board.headline, board.summary, board.decided, board.patched, board.timings,
            board.changes, board.gpu_stall,
            tuple((n.name, n.snapshot.state, n.phase_text, n.snapshot.progress_counts, n.cause, n.errors, n.warnings,
                   None if n.ranks is None else (n.ranks.total, n.ranks.ahead_phase, tuple(r.label for r in n.ranks.behind)),
                   n.caught_up, n.settled) for n in board.nodes))


def _thinned(rows: list[list[Any]], thinned: int) -> tuple[list[list[Any]], int]:
    """Past the cap: drop every other Board that changed nothing but progress (a state change, a launch's
    last Board stay)."""
    kept: list[list[Any]] = []
    for i, row in enumerate(rows):
        prev = kept[-1] if kept else None
        same = prev is not None and prev[1] == row[1] and prev[2].get("state") == row[2].get("state")
        if i % 2 == 1 and same and i != len(rows) - 1 and rows[i + 1][1] == row[1]:
            thinned += 1
            continue
        kept.append(row)
    return kept, thinned


def redacted(node: Any) -> Any:
    """Every string in a JSON tree through :func:`symmtui.redact.redact` (keys too: they can be env names' values)."""
    if isinstance(node, str):
        return redact(node)
    if isinstance(node, list):
        return [redacted(v) for v in node]
    if isinstance(node, dict):
        return {redact(str(k)): redacted(v) for k, v in node.items()}
    return node


class Recorder:
    """Record one Session into a bundle: ``session.observe(rec.observe)``, ``start()``, ``close()`` on the end.

    ``dest``: write here (``--bundle PATH``, the demo's) instead of the store (``symmtui.bundle.store``).
    ``warn``: how a failed write is said (one line); the path written last is :attr:`path`.
    """

    def __init__(
        self,
        *,
        name: str,
        host: str,
        command: ServerCommand | None,
        nvml: Nvml | None = None,
        ruleset: RuleSet | None = None,
        dest: Path | None = None,
        warn: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        env: Callable[[], EnvInfo] | None = None,
    ) -> None:
        self.name = name
        self.host = host
        self.dest = dest
        self.warn = warn
        self.ruleset = ruleset
        self._clock = clock
        self._t0 = clock()
        self._wall0 = time.time()
        self._env_fn = env if env is not None else (lambda: capture(command, nvml=nvml))
        self._queue: queue.Queue[tuple[float, object]] = queue.Queue(QUEUE_CAP)
        self._worker = threading.Thread(target=self._run, name="symmtui-bundle", daemon=True)
        self._env_done = threading.Event()
        self._closed = False
        self.environment: EnvInfo | None = None
        """The environment once captured (``env_done`` set): the launch history can take its versions here."""
        self.env_done = self._env_done
        self.path: Path | None = None
        self.writes = 0
        self.error: str | None = None
        # --- the recording (the worker thread's only)
        self._env: EnvInfo | None = None
        self._gens: dict[int, dict[str, Any]] = {}
        self._gen = 0
        # Lines and events are kept as they came (tuples) and made clean (redacted, cut, encoded) when a bundle is
        # written: doing it as they came took the GIL from the judging of a long log's last 0.5 MB (its verdict).
        self._head: list[list[Any] | tuple[Any, ...]] = []
        self._head_bytes = 0
        self._tail: deque[list[Any] | tuple[Any, ...]] = deque()  # tuples: not redacted yet
        self._tail_sizes: deque[int] = deque()
        self._tail_bytes = 0
        self._omitted = 0
        self._seen = 0
        self._dropped = 0
        self._events: list[list[Any] | tuple[Any, ...]] = []
        self._events_omitted = 0
        self._snaps: list[list[Any]] = []
        self._snap_key: tuple[int, str] | None = None
        self._snaps_thinned = 0
        self._boards: list[list[Any]] = []
        self._board_key: tuple[int, str] | None = None
        self._boards_thinned = 0
        self._infos: Any = None
        self._rounds: list[list[Any]] = []
        self._stride = 1
        self._gpu_seen = 0
        self._topology: Any = None
        self._topology_reason: str | None = None
        self._verdicts: list[dict[str, Any]] = []
        self._verdict_key: tuple[int, str] | None = None  # (generation, state) recorded last
        self._verdict_open = False  # the last one kept is a crash that has not settled yet
        self._unwritten = False  # a verdict is kept that no write has taken yet (the log not caught up)
        self._notices: list[list[Any]] = []
        self._paths: dict[str, Path] = {}  # log path -> the bundle written for it

    # ---- the Session's side ----------------------------------------------------------------

    def observe(self, message: SessionMessage) -> None:
        """The Session's observer: stamp and queue (waits while the queue is full; never raises)."""
        self._queue.put((self._clock() - self._t0, message))

    def start(self) -> None:
        """Start the worker and the environment capture."""
        self._worker.start()
        threading.Thread(target=self._capture_env, name="symmtui-bundle-env", daemon=True).start()

    def close(self) -> None:
        """Write the bundle a last time and stop (the Session's close hook); waits for the write."""
        if self._closed:
            return
        self._closed = True
        boundary.release_held()  # a session closed before the dashboard's first frame: the worker goes on now
        try:
            self._queue.put((self._clock() - self._t0, _CLOSE), timeout=CLOSE_JOIN)
        except queue.Full:
            return  # the worker is stuck writing: nothing more can be said
        self._worker.join(CLOSE_JOIN)

    def _capture_env(self) -> None:
        boundary.after_first_frame()
        try:
            env = self._env_fn()
        except (OSError, UserError, ValueError) as exc:  # capture words its own failures; these are the unforeseen
            env = EnvInfo(taken_at=time.time(), symmtui="unknown", notes=(f"environment not read: {exc}",))
        self.environment = env
        self._queue.put((self._clock() - self._t0, _EnvReady(env)))
        self._env_done.set()

    # ---- the worker ------------------------------------------------------------------------

    def _run(self) -> None:
        boundary.after_first_frame()  # the messages wait in the queue meanwhile
        while True:
            t, message = self._queue.get()
            if message is _CLOSE:
                if not self._env_done.is_set():
                    self._env_done.wait(ENV_WAIT_AT_CLOSE)
                    self._drain_env()
                if self._gens or self._verdicts or self._rounds:  # a run that showed nothing leaves no file
                    self.write(final=True)  # cheap (no fsync): the file then says it holds the whole run
                return
            if isinstance(message, _EnvReady):
                self._env = message.env
                if self.writes:
                    self.write()
                continue
            if self.ingest(round(t, 3), message):  # type: ignore[arg-type]
                self.write()

    def _drain_env(self) -> None:
        """Take an environment that arrived while we waited at close (other messages are past the end)."""
        with contextlib.suppress(queue.Empty):
            while True:
                _t, message = self._queue.get_nowait()
                if isinstance(message, _EnvReady):
                    self._env = message.env

    def ingest(self, t: float, message: SessionMessage) -> bool:
        """Add one message to the recording (the worker thread); True when the bundle should be written: the node
        has a verdict not written yet, and its log is judged up to where it was when opened."""
        if isinstance(message, EngineBatch):
            return self._batch(t, message)
        if isinstance(message, GpuRound):
            self._gpu(t, message.snapshot, message.our_pids)
        elif isinstance(message, TopologyRead):
            try:
                self._topology = redacted(encode(message.topology))
            except TypeError as exc:
                self._topology, self._topology_reason = None, f"not kept: {exc}"
            else:
                self._topology_reason = message.reason
        elif isinstance(message, Notice) and len(self._notices) < fmt.MAX_NOTICES:
            self._notices.append([t, message.severity, message.text])
        return False

    def _verdict(self, t: float, batch: EngineBatch) -> bool:
        """The node's state entered a verdict (once per change of its generation and state): keep it, as its
        Board said it. A crash is kept again, in its place, until it has settled (the other ranks' copies in),
        so the bundle's cause is the one `wait` printed and the webhook said."""
        snap = batch.snapshot
        view = batch.board.view(batch.node)
        key = (batch.generation, snap.state.value)
        if snap.state not in VERDICTS:
            self._verdict_key, self._verdict_open = None, False
            return False
        if key == self._verdict_key and not self._verdict_open:
            return False
        if key == self._verdict_key:
            self._verdicts.pop()  # the unsettled crash this one completes
        self._verdict_key = key
        self._verdict_open = snap.state is State.CRASHED and not view.settled
        self._verdicts.append({
            "t": t, "generation": batch.generation, "state": snap.state.value,
            "launch_id": batch.launch_id, "log_path": batch.log_path,
            "elapsed": round(view.elapsed, 3),  # the Board's figure: the report says what `wait` printed
            "phase": snap.phase, "detail": snap.detail,
            "cause": cause_json(view.cause),
            "phases": phases_json(snap),
            "changes": changes_json(batch.board.changes if batch.board.node == batch.node else None),
        })
        return True

    def _batch(self, t: float, batch: EngineBatch) -> bool:
        g = batch.generation
        if g not in self._gens:
            self._gens[g] = {"generation": g, "t": t, "log_path": batch.log_path}
        self._gen = g
        self._gens[g]["log_path"] = batch.log_path
        self._dropped += batch.dropped
        for line in batch.lines:
            if line.progress:
                continue  # a provisional carriage-return update: its finished line comes later
            self._seen += 1
            size = min(len(line.text), fmt.MAX_LINE_CHARS) + 24
            if self._head_bytes + size <= fmt.HEAD_BYTES and not self._tail:
                self._head.append((t, g, line.no, line.offset, line.text))
                self._head_bytes += size
                continue
            # (most tail lines are dropped again before any write: never made clean)
            self._tail.append((t, g, line.no, line.offset, line.text))
            self._tail_sizes.append(size)
            self._tail_bytes += size
            while self._tail_bytes > fmt.TAIL_BYTES and len(self._tail) > 1:
                self._tail.popleft()
                self._tail_bytes -= self._tail_sizes.popleft()
                self._omitted += 1
        for notice in batch.notices:
            if len(self._notices) < fmt.MAX_NOTICES:
                self._notices.append([t, "file", f"{notice.kind}: {notice.message}"])
        for event in batch.events:
            if len(self._events) < fmt.MAX_EVENTS:
                self._events.append((t, g, event))
            else:
                self._events_omitted += 1
        self._snapshot(t, g, batch.snapshot, batch.ranks)
        self._board(t, g, batch.board)
        # A verdict met while what the log held at its opening is still being judged (a finished log's served
        # past before its crash) is kept but not written yet: its write (~10 ms) would hold up the judging,
        # and the next batches may end it. The write comes with the first batch that has caught up.
        self._unwritten |= self._verdict(t, batch)
        if self._unwritten and batch.board.view(batch.node).caught_up:
            self._unwritten = False
            return True
        return False

    def _board(self, t: float, g: int, board: Board) -> None:
        """Keep the Board when what it says changed (not for time passing: replay moves the clocks on)."""
        key = (g, repr(_steady(board)))
        if key == self._board_key:
            return
        self._board_key = key
        self._boards.append([t, g, redacted(encode(board))])
        if len(self._boards) > fmt.MAX_SNAPSHOTS:
            self._boards, self._boards_thinned = _thinned(self._boards, self._boards_thinned)

    def _snapshot(self, t: float, g: int, snap: Snapshot, ranks: RankSummary | None) -> None:
        """Keep the snapshot when the judgement changed (not for time passing: replay recomputes elapsed)."""
        steady = replace(snap, elapsed=0.0, remaining_timeout=None, since_activity=None,
                                     last_lines=(), log_span=None)
        rank_key = None if ranks is None else (ranks.total, ranks.ahead_phase, tuple(r.label for r in ranks.behind))
        key = (g, repr((steady, rank_key)))
        if key == self._snap_key:
            return
        self._snap_key = key
        self._snaps.append([t, g, redacted(encode(replace(snap, last_lines=()))),
                            None if ranks is None else redacted(encode(ranks))])
        if len(self._snaps) > fmt.MAX_SNAPSHOTS:
            self._thin_snapshots()

    def _thin_snapshots(self) -> None:
        """Past the cap: drop every other snapshot that changed nothing but progress (state changes stay)."""
        kept: list[list[Any]] = []
        for i, rec in enumerate(self._snaps):
            prev = kept[-1] if kept else None
            same_state = prev is not None and prev[2].get("state") == rec[2].get("state") and prev[1] == rec[1]
            if i % 2 == 1 and same_state and i != len(self._snaps) - 1:
                self._snaps_thinned += 1
                continue
            kept.append(rec)
        self._snaps = kept

    def _gpu(self, t: float, snap: GpuSnapshot, ours: frozenset[int]) -> None:
        if self._infos is None or len(self._infos) != len(snap.infos):
            try:
                self._infos = redacted(encode(snap.infos))
            except TypeError:
                self._infos = []
        self._gpu_seen += 1
        if (self._gpu_seen - 1) % self._stride:
            return
        reason = redact(snap.unavailable_reason) if snap.unavailable_reason else None
        self._rounds.append([t, round(snap.time, 3), gpu_rows(snap), sorted(ours), reason])
        if len(self._rounds) > fmt.MAX_GPU_ROUNDS:
            self._rounds = self._rounds[::2]
            self._stride *= 2

    # ---- writing ---------------------------------------------------------------------------

    def document(self, *, final: bool = False, log_share: float = 1.0) -> dict[str, Any]:
        """The bundle's JSON document now (``log_share`` < 1 keeps less of the log: the size bound)."""
        head = _cleaned(self._head, _kept_line)
        tail = _cleaned(self._tail, _kept_line)
        omitted = self._omitted
        if log_share < 1.0:
            keep_head = int(len(head) * log_share)
            keep_tail = int(len(tail) * log_share)
            omitted += (len(head) - keep_head) + (len(tail) - keep_tail)
            head, tail = head[:keep_head], tail[len(tail) - keep_tail:]
        rest = {  # lines and events were made clean above, snapshots and Boards as they were kept; these here
            "name": redact(self.name),
            "host": redact(self.host),
            "generations": redacted([self._gens[g] for g in sorted(self._gens)]),
            "events": _cleaned(self._events, _kept_event),
            "events_omitted": self._events_omitted,
            "snapshots": self._snaps,
            "snapshots_thinned": self._snaps_thinned,
            "boards": self._boards,
            "boards_thinned": self._boards_thinned,
            "gpu": {"fields": list(GPU_FIELDS), "infos": self._infos, "stride": self._stride,
                    "rounds": self._rounds},
            "topology": self._topology,
            "topology_reason": redact(self._topology_reason or "") or None,
            "verdicts": redacted(self._verdicts),
            "notices": redacted(self._notices),
        }
        return {
            "format": fmt.FORMAT,
            "version": fmt.VERSION,
            "written_at": time.time(),
            "started_at": self._wall0,
            "final": final,
            **rest,
            "log": {"head": head, "tail": tail, "omitted_lines": omitted, "lines_seen": self._seen,
                    "engine_dropped": self._dropped},
            "environment": self._env.to_json() if self._env is not None else None,
            "limits": {"head_bytes": fmt.HEAD_BYTES, "tail_bytes": fmt.TAIL_BYTES,
                       "max_file_bytes": fmt.MAX_FILE_BYTES, "max_gpu_rounds": fmt.MAX_GPU_ROUNDS},
        }

    def encoded(self, *, final: bool = False) -> bytes:
        """The compressed file, within :data:`format.MAX_FILE_BYTES` (and :data:`format.MAX_JSON_BYTES`
        uncompressed): less of the log until it fits, then
        fewer events, snapshots and GPU rounds (evenly spread, the last of each kept)."""
        share, keep = 1.0, 1.0
        while True:
            doc = self.document(final=final, log_share=share)
            if keep < 1.0:
                for key in ("events", "snapshots", "boards"):
                    doc[key] = _spread(doc[key], keep)
                doc["gpu"]["rounds"] = _spread(doc["gpu"]["rounds"], keep)
                doc["trimmed"] = keep
            text = json.dumps(doc, separators=(",", ":")).encode("utf-8")
            data = gzip.compress(text, compresslevel=6, mtime=0)
            if (len(data) <= fmt.MAX_FILE_BYTES and len(text) <= fmt.MAX_JSON_BYTES) or keep < 1e-4:
                return data  # within what read_bundle reads back, compressed and not
            if share >= 1 / 64:
                share /= 2
            else:
                share, keep = 0.0, keep / 2

    def write(self, *, final: bool = False) -> Path | None:
        """Write the bundle now (atomically): ``dest``, else this generation's log's file in the store, a
        new name the first time (``store.place``: no other run shares it); a failure is one warning."""
        try:
            data = self.encoded(final=final)
            if self.dest is not None:
                path = self.dest
                fsatomic.write_atomic(path, data, mode=0o600, durable=False)
            else:
                gen = self._gens.get(self._gen, {})
                key = str(gen.get("log_path"))
                known = self._paths.get(key)
                if known is None:  # this log's first write: a name of its own, then the store is pruned
                    started = self._wall0 + float(gen.get("t") or 0.0)
                    path = self._paths[key] = store.place(data, store.stem(gen.get("log_path"), self.name), started)
                else:
                    path = known
                    fsatomic.write_atomic(path, data, mode=0o600, durable=False)
        except (OSError, UserError) as exc:
            self.error = f"could not write the bundle: {exc}"
            if self.warn is not None:
                self.warn(self.error)
            return None
        self.path = path
        self.writes += 1
        return path
