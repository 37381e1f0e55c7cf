"""The command-line front end of a Session: its engine batches feed `wait`'s printer until the verdict."""

from __future__ import annotations

import queue
import sys
from typing import TextIO

from symmtui import clitext
from symmtui.core.engine import EngineUpdate
from symmtui.core.waiting import WaitResult, report
from symmtui.session.core import Session
from symmtui.session.messages import EngineBatch, Notice, SessionMessage


class Headless:
    """Attach to ``session`` without a screen: batches queue up for :meth:`verdict`, notices go to ``err``."""

    def __init__(self, session: Session, err: TextIO | None = None) -> None:
        self.session = session
        self.err = err if err is not None else sys.stderr
        self.updates: queue.Queue[EngineUpdate] = queue.Queue()
        session.attach(self._post, sample_gpus=False)

    def _post(self, message: SessionMessage) -> None:
        if isinstance(message, EngineBatch):
            self.updates.put(EngineUpdate(message.lines, message.events, message.notices, message.snapshot,
                                          message.dropped, message.generation, message.ranks))
        elif isinstance(message, Notice):
            clitext.note(f"{message.severity}: {message.text}", self.err)

    def verdict(self, out: TextIO | None = None, *, stacks: bool = False) -> WaitResult:
        """Print phase lines, then the verdict, as `symmtui wait` does; the session is closed after.

        ``stacks``: when the state becomes STALLED, dump the server's processes once and print the
        collapsed summary under the STALLED line (saved next to the log).
        """
        engine = self.session.engine
        assert engine is not None, "follow() or launch() first"
        try:
            return report(engine, self.updates, out if out is not None else sys.stdout,
                          port_owner=self.session.port_owner,
                          on_stall=self.session.stacks_summary if stacks else None,
                          on_ready=self.session.timings.lines if self.session.timings is not None else None)
        finally:
            self.session.close()
