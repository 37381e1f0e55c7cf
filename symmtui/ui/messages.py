"""Messages of the dashboard's own workers (relaunch progress and result); the Session's are in bridge.py."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from symmtui.launch.report import Progress


@dataclass
class StopProgress(Message):
    """One step of a stop / relaunch (signals sent, GPU memory draining, port free, launched)."""

    progress: Progress


@dataclass
class RelaunchDone(Message):
    """The relaunch finished: `error` is None when the new server started."""

    error: str | None
    summary: str
