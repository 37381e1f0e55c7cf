"""The notifier plug-in: a Session observer that notifies each verdict (READY, CRASHED, STALLED, TIMED OUT)
through every channel the host has, without ever making the verdict wait: the work runs on threads of
its own, and the Session's close gives webhooks still in flight at most FLUSH_BOUND seconds."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping

from msgspec import Struct, field

from symmtui.launch.notifyconf import NotifyConfig, Webhook
from symmtui.notify import local
from symmtui.notify.message import VerdictNote, note_of
from symmtui.notify.webhook import deliver
from symmtui.session.core import Session
from symmtui.session.messages import Bell, SessionMessage, VerdictReached
from symmtui.session.spec import Notify

FLUSH_BOUND = 3.0
"""Seconds the Session's close (after `wait` and `launch` printed the verdict) waits for webhooks still in
flight; then the verb exits with the verdict's code and a warning line for each webhook not done."""


class _Delivery(Struct):
    what: str
    thread: threading.Thread | None = None
    reported: bool = False
    cancel: threading.Event = field(default_factory=threading.Event)


class Notifier:
    """Notifies each verdict it hears (``observe``: a Session observer) once; ``finish`` at exit.

    ``warn``: one line for the user (a failed webhook, a failed tmux or notify-send); ``bell``: rings the
    terminal (default: BEL to /dev/tty; the dashboard rings through its own screen).
    """

    def __init__(self, config: NotifyConfig, *, name: str, host: str, warn: Callable[[str], None],
                 bell: Callable[[], str | None] | None = None, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.name = name
        self.host = host
        self.warn = warn
        self.bell = bell if bell is not None else local.ring_terminal
        self.env = env if env is not None else os.environ
        self.sent: list[VerdictNote] = []
        """Every note dispatched, in order (what was told, for the caller and the tests)."""
        self._lock = threading.Lock()
        self._deliveries: list[_Delivery] = []
        self._done = False

    # ---- hearing verdicts ----------------------------------------------------------------------

    def observe(self, message: SessionMessage) -> None:
        """Session observer: a VerdictReached is notified (the Session posts one per change of the verdict)."""
        if isinstance(message, VerdictReached):
            note = note_of(message.board, name=self.name, host=self.host, log_path=message.log_path,
                           launch_id=message.launch_id, generation=message.generation)
            if note is not None:
                self.tell(note)

    def tell(self, note: VerdictNote) -> VerdictNote | None:
        """Notify ``note`` if ``[notify] on`` lists its verdict; returns at once."""
        if note.verdict not in self.config.on:
            return None
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
        with self._lock:  # the ones done are let go: a dashboard whose verdict flips for hours keeps no list
            self._deliveries = [o for o in self._deliveries if o.thread is not None and o.thread.is_alive()]
            self._deliveries.append(d)
            d.thread.start()  # under the lock: a delivery in the list is always started

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

    def finish(self, bound: float = FLUSH_BOUND) -> None:
        """At the end: wait at most ``bound`` seconds for what is in flight; one warning line for each
        webhook still not done, and nothing more from them after."""
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


def plug_in(session: Session, spec: Notify) -> Notifier:
    """A Notifier observing ``session`` (``spec.config`` None: the defaults, no webhook); its warnings are the
    Session's notices (``symmtui: warning: ...`` on stderr once it closed); with ``spec.bell_on_screen`` it
    rings through the front end's screen (a Bell message: a BEL written past Textual could land inside one of
    its escape sequences). The Session's close flushes it (FLUSH_BOUND)."""

    def bell() -> str | None:
        session.send(Bell())
        return None

    notifier = Notifier(spec.config or NotifyConfig(), name=session.name, host=session.host,
                        warn=lambda text: session.notify(text, "warning"), bell=bell if spec.bell_on_screen else None)
    session.observe(notifier.observe, name="notify")
    session.on_close(notifier.finish)
    return notifier
