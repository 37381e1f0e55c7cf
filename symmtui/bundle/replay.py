"""Replay a bundle: the Session protocol (``session.protocol``) over a recording, on its timeline (pause, seek, speed).

:class:`ReplaySession` has no engine, sampler or supervisor: a player thread posts the same
``EngineBatch`` (with the Board the live session posted: the cause, its diagnosis and next step as they
were shown live, whatever catalogue the reader has), ``GpuRound``, ``TopologyRead`` and ``Notice``
messages a live session posted, at the recorded times divided by the speed, into the same kind of
mailbox. A bundle written before Boards were recorded is judged again from its snapshots (and says so). Any front end of a Session shows it unchanged (the dashboard:
``symmtui replay``); its intents are refused (it shows what was recorded). A seek posts one batch that
starts the log pane over (``restarted``) with every line of that launch up to the new time, the
judgement as it stood then, and the GPU round of that moment.

The recorded lines are written, as they are posted, to a file of the replay's own (in a temp folder removed at
``close``): the dashboard's log pane reads the file a batch names, as it does a live log, and the events'
byte offsets are remapped to it (the recording's are the original log's). A seek starts a new file.
"""

from __future__ import annotations

import bisect
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from msgspec import Struct, field
from msgspec.structs import replace

from symmtui.bringup.engine import EngineUpdate
from symmtui.bundle.codec import decode
from symmtui.bundle.format import Bundle, BundleError
from symmtui.bundle.recorder import GPU_FIELDS
from symmtui.errors import UserError
from symmtui.gpu.results import NA, GpuInfo, GpuProcess
from symmtui.gpu.results import GpuSample as NvmlSample
from symmtui.gpu.sampler import GpuSnapshot
from symmtui.gpu.topology import Topology
from symmtui.judge import board as boards
from symmtui.judge.board import Board, NodeBoard, NodeInput, Said
from symmtui.judge.events import Event
from symmtui.judge.ranks import RankSummary
from symmtui.judge.readiness import Snapshot, State
from symmtui.judge.rules import strip_ansi
from symmtui.judge.verdict import NodeView, findings, ordered_events
from symmtui.logs.decode import LogLine
from symmtui.proc.identity import Outcome, Signalled
from symmtui.session import intents
from symmtui.session.intents import Intent
from symmtui.session.mailbox import Mailbox, Wake
from symmtui.session.messages import (
    EngineBatch,
    GpuRound,
    Notice,
    SessionMessage,
    StacksTaken,
    TopologyRead,
)

A = TypeVar("A")
LAST_LINES = 20  # what a snapshot's last_lines held (ReadinessConfig's default)
MAX_SLEEP = 0.25  # the player wakes at least this often (pause, seek, close)


class _Launch(Struct):
    """One launch (engine generation) of the recording: its lines, events and snapshots, each sorted by time."""

    generation: int
    lines: list[LogLine] = field(default_factory=list)
    line_t: list[float] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    event_t: list[float] = field(default_factory=list)
    snaps: list[tuple[Snapshot, RankSummary | None]] = field(default_factory=list)
    snap_t: list[float] = field(default_factory=list)
    boards: list[Board] = field(default_factory=list)
    board_t: list[float] = field(default_factory=list)


class Frame(Struct, frozen=True):
    """A moment of the timeline: what changed at ``t`` (a launch's lines/events/snapshot, a GPU round, a note)."""

    t: float
    kind: str  # "engine", "gpu", "topology", "notice"
    generation: int = 0
    payload: Any = None


def _na(value: Any) -> Any:
    return NA if value is None else value


def _judged_again(host: str, snap: Snapshot, ranks: RankSummary | None, seq: int) -> Board:
    """The Board of a snapshot recorded before Boards were (one node: the bundle's): its diagnoses come from
    this symmtui's shipped catalogue, not the recording session's."""
    view = NodeView(host, snap, ranks, findings(ordered_events(snap)))
    return boards.build(seq, [NodeInput(view)], snap.started_at + snap.elapsed)


def _checked(board: object) -> Board:
    """A decoded Board whose every part has the shape a front end lays out (a hand-edited bundle: ValueError,
    which the Recording says in one line)."""
    if not isinstance(board, Board) or not isinstance(board.state, State) or not isinstance(board.nodes, tuple) \
            or not board.nodes:
        raise ValueError("a board that is not one")
    for n in board.nodes:
        if not isinstance(n, NodeBoard) or not isinstance(n.snapshot, Snapshot) \
                or not isinstance(n.snapshot.state, State) or not isinstance(n.name, str):
            raise ValueError("a board's node that is not one")
        for said in (n.cause, *n.errors, *n.warnings):
            if said is not None and not isinstance(said, Said):
                raise ValueError("a board's error that is not one")
            if said is not None and not isinstance(said.event, Event):
                raise ValueError("a board's error without its event")
    if board.node not in {n.name for n in board.nodes}:
        raise ValueError("a board about a node it does not hold")
    _ = (board.snapshot, board.label, board.about.shown)  # what every front end reads first
    return board


def _moved(board: Board, moved: float) -> Board:
    """A live Board ``moved`` seconds later: the elapsed time and the time left go on."""
    def node(n: NodeBoard) -> NodeBoard:
        snap = n.snapshot
        if snap.state.final:
            return n
        left = None if snap.remaining_timeout is None else max(0.0, snap.remaining_timeout - moved)
        return replace(n, elapsed=n.elapsed + moved, snapshot=replace(
            snap, elapsed=snap.elapsed + moved, remaining_timeout=left))
    return replace(board, nodes=tuple(node(n) for n in board.nodes))


class Recording:
    """A bundle decoded for replay: its launches, GPU rounds, topology and a sorted list of frames."""

    def __init__(self, bundle: Bundle) -> None:
        try:
            self._read(bundle)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:  # a hand-edited bundle
            raise BundleError(f"{bundle.path}: damaged bundle ({type(exc).__name__}: {exc}); "
                              "give a bundle as symmtui wrote it") from None

    def _read(self, bundle: Bundle) -> None:
        data = bundle.data
        self.bundle = bundle
        self.launches: dict[int, _Launch] = {}
        for row in bundle.lines:
            t, g, no, offset, text = float(row[0]), int(row[1]), int(row[2]), int(row[3]), str(row[4])
            launch = self._launch(g)
            launch.lines.append(LogLine(no, offset, text, strip_ansi(text), False, False))
            launch.line_t.append(t)
        for t, g, enc in data.get("events") or []:
            event = decode(enc)
            if isinstance(event, Event):
                launch = self._launch(int(g))
                launch.events.append(event)
                launch.event_t.append(float(t))
        for t, g, enc in data.get("boards") or []:
            board = _checked(decode(enc))
            launch = self._launch(int(g))
            launch.boards.append(board)
            launch.board_t.append(float(t))
        for t, g, enc, ranks in data.get("snapshots") or []:
            snap = decode(enc)
            if isinstance(snap, Snapshot):
                if not isinstance(snap.state, State):  # an early bundle kept the state as its plain name
                    snap = replace(snap, state=State(str(snap.state)))
                launch = self._launch(int(g))
                rank = decode(ranks) if ranks is not None else None
                launch.snaps.append((snap, rank if isinstance(rank, RankSummary) else None))
                launch.snap_t.append(float(t))
        gpu = data.get("gpu") or {}
        infos = decode(gpu.get("infos") or [])
        self.infos: tuple[GpuInfo, ...] = tuple(i for i in infos if isinstance(i, GpuInfo))
        self.gpu_rounds: list[list[Any]] = list(gpu.get("rounds") or [])
        self.gpu_t = [float(r[0]) for r in self.gpu_rounds]
        topo = data.get("topology")
        topology = decode(topo) if topo is not None else None
        self.topology: Topology | None = topology if isinstance(topology, Topology) else None
        self.topology_reason: str | None = data.get("topology_reason") or (None if topo else "not recorded")
        self.judged_again = any(launch.snaps and not launch.boards for launch in self.launches.values())
        """Recorded before Boards were: the replay judges the snapshots again with this symmtui's catalogue."""
        frames: list[Frame] = []
        for g, launch in self.launches.items():
            moments = sorted(set(launch.line_t) | set(launch.event_t) | set(launch.snap_t) | set(launch.board_t))
            frames += [Frame(t, "engine", g) for t in moments]
        frames += [Frame(t, "gpu", payload=i) for i, t in enumerate(self.gpu_t)]
        frames += [Frame(float(n[0]), "notice", payload=(str(n[1]), str(n[2])))
                   for n in data.get("notices") or [] if n[1] != "file"]
        frames.sort(key=lambda f: (f.t, f.kind != "engine", f.generation))
        self.frames = frames
        self.duration = frames[-1].t if frames else 0.0

    def _launch(self, g: int) -> _Launch:
        if g not in self.launches:
            self.launches[g] = _Launch(g)
        return self.launches[g]

    def generation_at(self, t: float) -> int | None:
        """The launch shown at ``t``: the last one with anything recorded at or before it."""
        best: tuple[float, int] | None = None
        for g, launch in self.launches.items():
            starts = [x[0] for x in (launch.line_t, launch.event_t, launch.snap_t) if x]
            if starts and min(starts) <= t and (best is None or min(starts) >= best[0]):
                best = (min(starts), g)
        return best[1] if best is not None else None

    def board_at(self, g: int, t: float, host: str) -> Board | None:
        """The Board of launch ``g`` as it stood at ``t`` (the recorded one, its clocks moved on); a bundle
        without Boards: its snapshot at ``t`` judged again."""
        launch = self.launches[g]
        if not launch.boards:
            at = self.snapshot_at(g, t)
            return _judged_again(host, at[0], at[1], bisect.bisect_right(launch.snap_t, t)) if at is not None else None
        i = bisect.bisect_right(launch.board_t, t) - 1
        if i < 0:
            return None
        board = launch.boards[i]
        return board if board.state.final else _moved(board, max(0.0, t - launch.board_t[i]))

    def snapshot_at(self, g: int, t: float) -> tuple[Snapshot, RankSummary | None] | None:
        """The judgement of launch ``g`` as it stood at ``t``: elapsed moved on, last lines filled in."""
        launch = self.launches[g]
        i = bisect.bisect_right(launch.snap_t, t) - 1
        if i < 0:
            return None
        snap, ranks = launch.snaps[i]
        if not snap.state.final:
            moved = max(0.0, t - launch.snap_t[i])
            remaining = None if snap.remaining_timeout is None else max(0.0, snap.remaining_timeout - moved)
            snap = replace(snap, elapsed=snap.elapsed + moved, remaining_timeout=remaining)
        upto = bisect.bisect_right(launch.line_t, t)
        last = tuple(ln.plain for ln in launch.lines[max(0, upto - LAST_LINES): upto])
        return replace(snap, last_lines=last), ranks

    def gpu_sample(self, i: int) -> GpuRound:
        """GPU round ``i`` as the message the sampler posted."""
        t, wall, rows, ours, reason = self.gpu_rounds[i][:5]
        samples = []
        for index, row in enumerate(rows):
            values = dict(zip(GPU_FIELDS, row, strict=False))
            procs_raw = row[len(GPU_FIELDS)] if len(row) > len(GPU_FIELDS) else None
            procs: Any = NA if procs_raw is None else tuple(
                GpuProcess(int(p[0]), _na(p[1]), NA, _na(p[2])) for p in procs_raw)
            v = {f: _na(values.get(f)) for f in GPU_FIELDS if f != "lost"}
            samples.append(NvmlSample(
                index=index, time=float(wall), memory_used=v["memory_used"], memory_reserved=v["memory_reserved"],
                memory_free=v["memory_free"], memory_total=v["memory_total"], utilization_gpu=v["utilization_gpu"],
                utilization_memory=v["utilization_memory"], temperature_c=v["temperature_c"], power_w=v["power_w"],
                pcie_gen=v["pcie_gen"], pcie_width=v["pcie_width"], processes=procs, lost=bool(values.get("lost")),
            ))
        snap = GpuSnapshot(float(wall), self.infos, tuple(samples), 0.0, reason, seq=i + 1)
        cap = next((inf.capability for inf in self.infos if isinstance(inf.capability, tuple)), None)
        return GpuRound(snap, frozenset(int(p) for p in ours or ()), cap)


READ_ONLY = "a replay shows what was recorded: patch, relaunch and stacks act on a live server"
NO_INTENTS = tuple((i, READ_ONLY) for i in boards.INTENTS)


class ReplaySession:
    """A recording played as a Session: ``attach`` starts the player; ``toggle_pause``, ``seek``, ``speed``."""

    def __init__(self, recording: Recording, *, speed: float = 1.0, paused: bool = False,
                 sample_gpus: bool = True) -> None:
        data = recording.bundle.data
        self.host = str(data.get("host") or "replay")
        self.name = f"replay: {data.get('name') or 'bundle'}"
        self.recording = recording
        self.speed = speed
        self.paused = paused
        self.position = 0.0  # timeline seconds already shown
        self._cursor = 0  # the next frame to post
        self._shown_gen: int | None = None
        self._control = threading.Event()
        self._seek_to: float | None = None
        self._lock = threading.Lock()
        self._player: threading.Thread | None = None
        self._sample = sample_gpus
        self._mailbox = Mailbox()
        self._observers: list[Callable[[SessionMessage], None]] = []
        self._closed = threading.Event()
        self.ended = threading.Event()
        """Set while everything recorded has been shown (cleared by a seek back)."""
        self._dir: Path | None = None  # the replay's own log files (made on the first batch)
        self._log: Path | None = None
        self._logs = 0
        self._at: dict[int, int] = {}  # line number -> its byte offset in the replay's file
        self._size = 0

    # ---- the Session protocol ----------------------------------------------------------------

    @property
    def nodes(self) -> tuple[str, ...]:
        return (self.host,)

    @property
    def named(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def attach(self, wake: Wake) -> Mailbox:
        """Start playing into the mailbox (GPU rounds too, unless built with ``sample_gpus=False``)."""
        self._mailbox.attach(wake)
        rec = self.recording
        if rec.topology is not None or rec.topology_reason:
            self._send(TopologyRead(rec.topology, rec.topology_reason))
        if self._sample and not rec.gpu_rounds:  # `wait` samples no GPUs: say so rather than "reading GPUs…"
            why = "no GPU samples in this bundle (recorded by symmtui wait, or without NVML)"
            self._send(GpuRound(GpuSnapshot(time.time(), (), (), 0.0, why), frozenset(), None))
        if rec.judged_again:
            self._send(Notice("this bundle was recorded before symmtui kept Boards: its diagnoses are judged again "
                              "with this symmtui's catalogue", "warning"))
        self._player = threading.Thread(target=self._play, name="symmtui-replay", daemon=True)
        self._player.start()
        return self._mailbox

    def observe(self, observer: Callable[[SessionMessage], None], *, name: str = "observer") -> None:
        """Hand every message to ``observer`` too (on the player's thread)."""
        self._observers.append(observer)

    def _send(self, message: SessionMessage) -> None:
        if self._closed.is_set():
            return
        for observer in self._observers:
            observer(message)
        self._mailbox.put(message)

    def ask(self, intent: Intent[A]) -> A:
        """A replay shows what was recorded: every intent is refused in one line (a stacks request says so)."""
        if isinstance(intent, intents.RequestStacks):
            self._send(StacksTaken(None, READ_ONLY, False, node=self.host))
            return cast(A, None)
        if isinstance(intent, intents.Say):
            self._send(Notice(intent.text, intent.severity))
            return cast(A, None)
        if isinstance(intent, intents.SignalProcess):  # the process view's k / K: answered, not raised

            return cast(A, Signalled(Outcome.REFUSED, f"{READ_ONLY}: pid {intent.listed.pid} not signalled"))
        raise UserError(READ_ONLY)

    def close(self) -> None:
        self._closed.set()
        self._control.set()
        if self._player is not None and self._player is not threading.current_thread():
            self._player.join(timeout=2.0)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _write(self, lines: tuple[LogLine, ...], *, restart: bool) -> str:
        """Append ``lines`` to the replay's log file (a new one on ``restart``); its path."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="symmtui-replay-"))
        if restart or self._log is None:
            self._logs += 1
            self._log = self._dir / f"replay-{self._logs}.log"
            self._log.write_bytes(b"")
            self._at, self._size = {}, 0
        data = bytearray()
        for line in lines:
            self._at[line.no] = self._size + len(data)
            data += line.text.encode("utf-8", "replace") + b"\n"
        if data:
            fd = os.open(self._log, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, bytes(data))
            finally:
                os.close(fd)
            self._size += len(data)
        return str(self._log)

    def _remapped(self, event: Event) -> Event:
        """``event`` with its byte offsets in the replay's file (an occurrence of lines not recorded: left out)."""
        at = self._at
        offsets = tuple((at[a], at[b]) for a, b in event.spans if a in at and b in at)
        return replace(event, offset=at.get(event.line_no, offsets[0][0] if offsets else -1),
                                   offsets=offsets)

    # ---- controls (any thread) ---------------------------------------------------------------

    def toggle_pause(self) -> bool:
        """Pause or resume; True when now paused."""
        with self._lock:
            self.paused = not self.paused
        self._control.set()
        return self.paused

    def seek(self, delta: float) -> float:
        """Move the position by ``delta`` timeline seconds (clamped to the recording); the new position."""
        with self._lock:
            base = self._seek_to if self._seek_to is not None else self.position
            self._seek_to = min(max(0.0, base + delta), self.recording.duration)
            target = self._seek_to
        self._control.set()
        return target

    # ---- the player --------------------------------------------------------------------------

    def _play(self) -> None:
        frames = self.recording.frames
        started_wall = time.monotonic()
        started_pos = self.position
        while not self.closed:
            with self._lock:
                target, self._seek_to = self._seek_to, None
                paused = self.paused
            if target is not None:
                self._jump(target)
                started_wall, started_pos = time.monotonic(), self.position
                continue
            if paused or self._cursor >= len(frames):
                if self._cursor >= len(frames):
                    self.ended.set()
                self._control.wait(MAX_SLEEP)
                self._control.clear()
                started_wall, started_pos = time.monotonic(), self.position
                continue
            due = frames[self._cursor].t
            now_pos = started_pos + (time.monotonic() - started_wall) * self.speed
            if due > now_pos:
                self.position = now_pos
                if self._control.wait(min(MAX_SLEEP, (due - now_pos) / self.speed)):
                    self._control.clear()
                    started_wall, started_pos = time.monotonic(), self.position
                continue
            # every frame due by now goes out in one batch per launch (a fast replay coalesces, as the engine does)
            end = self._cursor
            while end < len(frames) and frames[end].t <= now_pos:
                end += 1
            self._post_span(self._cursor, end)
            self._cursor = end
            self.position = max(self.position, frames[end - 1].t)

    def _post_span(self, start: int, end: int) -> None:
        """Post frames ``[start, end)``: one EngineBatch per launch they touch, the last GPU round, the notes."""
        rec = self.recording
        frames = rec.frames[start:end]
        if not frames:
            return
        t_from = rec.frames[start - 1].t if start > 0 else -1.0
        t_to = frames[-1].t
        for g in sorted({f.generation for f in frames if f.kind == "engine"}):
            self._engine_batch(g, t_from, t_to, restart=False)
        gpu = [f for f in frames if f.kind == "gpu"]
        if gpu and self._sample:
            self._send(rec.gpu_sample(int(gpu[-1].payload)))
        for f in frames:
            if f.kind == "notice":
                severity, text = f.payload
                self._send(Notice(text, severity))

    def _engine_batch(self, g: int, t_from: float, t_to: float, *, restart: bool) -> None:
        """The lines and events of launch ``g`` recorded in ``(t_from, t_to]`` and its judgement at ``t_to``."""
        rec = self.recording
        launch = rec.launches[g]
        at = rec.snapshot_at(g, t_to)
        if at is None or self.closed:
            return
        snap, ranks = at
        lo, hi = bisect.bisect_right(launch.line_t, t_from), bisect.bisect_right(launch.line_t, t_to)
        elo, ehi = bisect.bisect_right(launch.event_t, t_from), bisect.bisect_right(launch.event_t, t_to)
        restarted = restart or (self._shown_gen is not None and g != self._shown_gen)
        self._shown_gen = g
        lines = tuple(launch.lines[lo:hi])
        path = self._write(lines, restart=restarted)
        events = tuple(self._remapped(ev) for ev in launch.events[elo:ehi])
        update = EngineUpdate(lines, events, (), snap, 0, g, ranks)
        board = rec.board_at(g, t_to, self.host)
        if board is not None:
            board = replace(board, why_not=NO_INTENTS, relaunch=None)  # nothing acts on a recording
            self._send(EngineBatch(self.host, update, path, board, restarted))

    def _jump(self, target: float) -> None:
        """Show the recording as it stood at ``target``: the launch then, from its first line, in one batch."""
        rec = self.recording
        self._cursor = bisect.bisect_right([f.t for f in rec.frames], target)
        self.position = target
        g = rec.generation_at(target)
        if g is not None:
            self._engine_batch(g, -1.0, target, restart=True)
        if self._sample and rec.gpu_t:
            i = bisect.bisect_right(rec.gpu_t, target) - 1
            if i >= 0:
                self._send(rec.gpu_sample(i))
        if self._cursor < len(rec.frames):
            self.ended.clear()


def states_in(recording: Recording) -> list[tuple[float, int, State]]:
    """(t, launch, state) each time a launch's state changed in the recording, in time order (tests, docs)."""
    out: list[tuple[float, int, State]] = []
    for g, launch in recording.launches.items():
        last: State | None = None
        for t, (snap, _r) in zip(launch.snap_t, launch.snaps, strict=True):
            if snap.state is not last:
                out.append((t, g, snap.state))
                last = snap.state
    return sorted(out)


