"""The Session observer that notifies on each verdict (READY, CRASHED, STALLED, TIMED OUT) through every
channel the host has, without ever making the verdict wait: the work runs on threads of its own, and a
front end that exits gives webhooks still in flight at most FLUSH_BOUND seconds."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from symmtui.notify import local
from symmtui.notify.config import NotifyConfig, Webhook
from symmtui.notify.message import VerdictNote, note_of
from symmtui.notify.webhook import deliver
from symmtui.session.messages import SessionMessage, VerdictReached

if TYPE_CHECKING:
    from symmtui.core.readiness import Snapshot
    from symmtui.session.core import Session

FLUSH_BOUND = 3.0
"""Seconds `wait` and `launch` wait, after printing the verdict, for webhooks still in flight; then they
exit with the verdict's code and a warning line for each webhook not done."""

Lines = Callable[[VerdictNote], tuple[str, ...]]


@dataclass
class _Delivery:
    what: str
    thread: threading.Thread | None = None
    reported: bool = False
    cancel: threading.Event = field(default_factory=threading.Event)


class Notifier:
    """Notifies each verdict it hears (``observe``: a Session observer) once; ``finish`` at exit.

    ``warn``: one line for the user (a failed webhook, a failed tmux or notify-send); ``bell``: rings the
    terminal (default: BEL to /dev/tty; the dashboard rings through its own screen); ``lines``: more
    lines for a note (the phase timings against earlier launches).
    """

    def __init__(self, config: NotifyConfig, *, name: str, host: str, warn: Callable[[str], None],
                 bell: Callable[[], str | None] | None = None, env: Mapping[str, str] | None = None,
                 lines: Lines | None = None) -> None:
        self.config = config
        self.name = name
        self.host = host
        self.warn = warn
        self.bell = bell if bell is not None else local.ring_terminal
        self.env = env if env is not None else os.environ
        self.lines = lines
        self.sent: list[VerdictNote] = []
        """Every note dispatched, in order (what was told, for the caller and the tests)."""
        self._lock = threading.Lock()
        self._deliveries: list[_Delivery] = []
        self._done = False

    # ---- hearing verdicts ----------------------------------------------------------------------

    def observe(self, message: SessionMessage) -> None:
        """Session observer: a VerdictReached is notified (the Session posts one per state change)."""
        if isinstance(message, VerdictReached):
            self.verdict(message.snapshot, generation=message.generation, launch_id=message.launch_id,
                         log_path=message.log_path)

    def verdict(self, snap: Snapshot, *, generation: int = 0, launch_id: str | None = None,
                log_path: str | None = None) -> VerdictNote | None:
        """Notify this snapshot's verdict (if it is one that notifies); returns at once."""
        note = note_of(snap, name=self.name, host=self.host, log_path=log_path, launch_id=launch_id,
                       generation=generation)
        return self.tell(note) if note is not None else None

    def tell(self, note: VerdictNote) -> VerdictNote | None:
        """Notify a note built elsewhere (a multi-node aggregate's, ``notify.nodes``) if ``[notify] on``
        lists its verdict; returns at once."""
        if note.verdict not in self.config.on:
            return None
        if self.lines is not None:
            try:
                note = note.with_lines(self.lines(note))
            except Exception as exc:  # noqa: BLE001 - extra lines are a nicety: the verdict is notified anyway
                self.warn(f"notification: could not add the phase timings ({type(exc).__name__}: {exc})")
        with self._lock:
            if self._done:
                return None
            self.sent.append(note)
        self._start("the terminal bell, tmux and desktop notification", self._local, note)
        for hook in self.config.webhooks:
            self._start(f"webhook {hook.shown}", self._webhook, note, hook)
        return note

    # ---- the channels (their own threads) ------------------------------------------------------

    def _start(self, what: str, fn: Callable[..., str | None], *args: object) -> None:
        d = _Delivery(what)

        def run() -> None:
            problem = fn(*args, d.cancel)
            self._report(d, problem)

        d.thread = threading.Thread(target=run, name="symmtui-notify", daemon=True)
        with self._lock:
            self._deliveries.append(d)
        d.thread.start()

    def _local(self, note: VerdictNote, _cancel: threading.Event) -> str | None:
        problems: list[str] = []
        if self.config.bell:
            self.bell()  # no terminal to ring is not a problem: a service has none
            problem = local.tmux_message(note, self.env)
            if problem:
                problems.append(problem)
        if self.config.desktop:
            problem = local.desktop_notification(note, self.env)
            if problem:
                problems.append(problem)
        return "notification: " + "; ".join(problems) if problems else None

    def _webhook(self, note: VerdictNote, hook: Webhook, cancel: threading.Event) -> str | None:
        return deliver(hook, note, timeout=self.config.timeout, retries=self.config.retries, cancel=cancel)

    def _report(self, d: _Delivery, problem: str | None) -> None:
        with self._lock:
            if d.reported or self._done:
                return
            d.reported = True
        if problem:
            self.warn(problem)

    # ---- the end -------------------------------------------------------------------------------

    def finish(self, snap: Snapshot | None = None, bound: float = FLUSH_BOUND) -> None:
        """At exit: notify ``snap``'s verdict if it was not yet (a verdict the front end saw before the
        Session posted it), then wait at most ``bound`` seconds for what is in flight; one warning line
        for each webhook still not done, and nothing more from them after."""
        if snap is not None and (not self.sent or self.sent[-1].state != _state_word(snap)):
            self.verdict(snap)
        deadline = time.monotonic() + bound
        with self._lock:
            pending = list(self._deliveries)
        for d in pending:
            if d.thread is not None:
                d.thread.join(max(0.0, deadline - time.monotonic()))
        late: list[str] = []
        with self._lock:
            self._done = True
            for d in pending:
                if d.thread is not None and d.thread.is_alive() and not d.reported:
                    d.reported = True
                    d.cancel.set()
                    late.append(d.what)
        for what in late:
            self.warn(f"{what}: no answer within {bound:g} s of the verdict; not waiting for it")


def _state_word(snap: Snapshot) -> str:
    from symmtui.notify.message import WORDS

    return WORDS.get(snap.state, str(snap.state))


def attach(session: Session, config: NotifyConfig | None, *, warn: Callable[[str], None] | None = None,
           bell: Callable[[], str | None] | None = None, lines: Lines | None = None) -> Notifier:
    """A Notifier observing ``session`` (``config`` None: the defaults, no webhook). ``warn`` defaults to the
    Session's notices (a front end shows them)."""
    timings = session.timings
    if lines is None and timings is not None:
        def lines(note: VerdictNote) -> tuple[str, ...]:  # the phases against earlier launches, once READY
            return tuple(timings.lines(note.launch_id)) if note.verdict == "ready" else ()
    notifier = Notifier(config or NotifyConfig(), name=session.name, host=session.host,
                        warn=warn or (lambda text: session.notify(text, "warning")), bell=bell, lines=lines)
    session.observe(notifier.observe)
    return notifier


def for_headless(session: Session, config: NotifyConfig | None, *, asked: bool, err: TextIO) -> Notifier | None:
    """`wait --notify` / `launch --notify` (or a profile with [notify]): a Notifier whose warnings are
    ``symmtui: warning: ...`` lines on ``err`` (they outlive the Session: the flush runs after it closed)."""
    if not asked and config is None:
        return None
    from symmtui import clitext

    return attach(session, config, warn=lambda text: clitext.note(f"warning: {text}", err))
