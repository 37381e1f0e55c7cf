"""Every queue between a Session and its readers, each with a cap and a drop policy; none ever blocks the sender.

- :class:`Mailbox` (the front end's): each node's engine batches are merged while the front end has
  not taken them, without their lines (no log text reaches a front end: the dashboard's pane reads the file
  itself, the printer prints phases and the Board); events are capped at
  MAX_EVENTS (an event updated later replaces its older copy; past the cap the oldest go); the Board
  (every batch taken carries the newest), the GPU round and the topology are latest-wins; notices,
  stacks dumps, verdicts and bells wait in order, at most MAX_NOTES (past it the oldest go, counted in
  ``dropped_notes``). A new launch's first batch replaces what is left of the one before (the pane
  starts over). The front end is woken once when the mailbox goes from empty to not empty, and takes
  everything at once.
- :class:`Relay` (each observer's: recorder, notifier, metrics): the observer runs on a thread of its
  own, fed through an inbox of at most OBSERVER_CAP messages; past it the oldest message that is not a
  verdict is dropped (counted in ``dropped``). Verdicts are never dropped, so a notifier hears CRASHED
  however slow the screen or the other observers are. An observer that raises is said once per
  distinct error (at most MAX_SAID), then only counted in ``failures``: the note it sends comes back to it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from msgspec.structs import replace

from symmtui.judge.board import Board
from symmtui.session.messages import (
    EngineBatch,
    GpuRound,
    SessionMessage,
    TopologyRead,
    VerdictReached,
)

MAX_EVENTS = 10_000
MAX_NOTES = 256
OBSERVER_CAP = 4096
MAX_SAID = 16  # distinct failures of one observer said to the user (each once); the rest are counted
Wake = Callable[[], object]


def merge(old: EngineBatch, new: EngineBatch) -> EngineBatch:
    """Two batches of one node as one: notices in order, an event's latest copy, the newest Board.
    A later launch's batch (a higher generation) replaces the older one's, keeping ``restarted``."""
    if new.generation > old.generation:
        return replace(new, restarted=True) if old.restarted or new.restarted else new
    up, more = old.update, new.update
    newer = {e.key for e in more.events}
    events = tuple(e for e in up.events if e.key not in newer) + more.events
    merged = replace(more, events=events[-MAX_EVENTS:], notices=(up.notices + more.notices)[-MAX_NOTES:],
                     dropped_lines=up.dropped_lines + more.dropped_lines)
    return replace(new, update=merged, restarted=old.restarted or new.restarted)


class Mailbox:
    """What the front end has not taken yet (see the module docstring); ``put`` from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._batches: dict[str, EngineBatch] = {}
        self._board: Board | None = None  # the newest Board any batch carried
        self._gpu: GpuRound | None = None
        self._topology: TopologyRead | None = None
        self._notes: deque[SessionMessage] = deque()
        self._wake: Wake | None = None
        self.dropped_notes = 0

    def _empty(self) -> bool:
        return not (self._batches or self._gpu or self._topology or self._notes)

    def attach(self, wake: Wake) -> None:
        """``wake`` is called (from the sender's thread) when something arrives in an empty mailbox."""
        with self._lock:
            self._wake = wake
            pending = not self._empty()
        if pending:
            wake()

    def put(self, message: SessionMessage) -> None:
        with self._lock:
            was_empty = self._empty()
            if isinstance(message, EngineBatch):
                if message.update.lines:  # the text stays with the observers (the recorder keeps head and tail)
                    message = replace(message, update=replace(message.update, lines=()))
                old = self._batches.get(message.node)
                if old is not None and message.generation < old.generation:
                    return  # the launch before a relaunch: its pane is gone
                self._batches[message.node] = message if old is None else merge(old, message)
                self._board = message.board  # the Session posts them in order: the latest is the newest
            elif isinstance(message, GpuRound):
                self._gpu = message
            elif isinstance(message, TopologyRead):
                self._topology = message
            else:
                self._notes.append(message)
                if len(self._notes) > MAX_NOTES:
                    self._notes.popleft()
                    self.dropped_notes += 1
            wake = self._wake if was_empty else None
            self._ready.notify_all()
        if wake is not None:
            wake()

    def take(self) -> list[SessionMessage]:
        """Everything waiting: each node's batch (each with the newest Board), the topology, the latest GPU
        round, then the notes in order."""
        with self._lock:
            board = self._board
            out: list[SessionMessage] = [b if b.board is board or board is None else replace(b, board=board)
                                         for b in self._batches.values()]
            out += [m for m in (self._topology, self._gpu) if m is not None]
            out += self._notes
            self._batches, self._gpu, self._topology = {}, None, None
            self._notes = deque()
        return out

    def wait(self, timeout: float) -> bool:
        """Block until something is waiting (True) or ``timeout`` passed (False): a reader without a loop."""
        with self._lock:
            return self._ready.wait_for(lambda: not self._empty(), timeout)


class Relay:
    """Run ``observer`` on a thread of its own over a bounded inbox (see the module docstring)."""

    def __init__(self, observer: Callable[[SessionMessage], None], *, name: str,
                 failed: Callable[[str], None], cap: int = OBSERVER_CAP) -> None:
        self.observer = observer
        self.name = name
        self.failed = failed
        self.cap = cap
        self.dropped = 0
        self.failures = 0  # messages the observer raised on
        self._said: set[str] = set()
        self._inbox: deque[SessionMessage] = deque()
        self._lock = threading.Condition()
        self._closing = False
        self._busy = False
        self._thread = threading.Thread(target=self._run, name=f"symmtui-{name}", daemon=True)
        self._thread.start()

    def put(self, message: SessionMessage) -> None:
        with self._lock:
            if self._closing:
                return
            self._inbox.append(message)
            if len(self._inbox) > self.cap:
                drop = next((m for m in self._inbox if not isinstance(m, VerdictReached)), None)
                if drop is not None:
                    self._inbox.remove(drop)
                    self.dropped += 1
            self._lock.notify()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._inbox and not self._closing:
                    self._lock.wait()
                if not self._inbox:
                    return
                message = self._inbox.popleft()
                self._busy = True
            try:
                self.observer(message)
            except Exception as exc:  # noqa: BLE001 - one observer's bug is said, the others go on
                self.failures += 1
                text = f"{self.name}: {type(exc).__name__}: {exc}"
                if text not in self._said and len(self._said) < MAX_SAID:  # once: the note it sends comes back here
                    self._said.add(text)
                    self.failed(text)
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until the observer has handled everything queued; True if it has."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._inbox and not self._busy, timeout)

    def close(self, timeout: float) -> None:
        """Let the observer finish what is queued (at most ``timeout`` s), then end its thread."""
        self.drain(timeout)
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._thread.join(max(0.0, timeout))
