"""Small messages from the controller's threads to the UI; the frequent ones coalesce (one pending at a time)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from symmtui.launch.report import Progress


class Coalesced(Message):
    """A 'something new is waiting' nudge: a newer one replaces a pending one of the same type.

    The data itself waits in the controller (a buffer of lines/events, a latest-value slot for
    snapshots); the UI drains it when the nudge arrives, so a burst costs one repaint.
    """

    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self)


class EngineDirty(Coalesced):
    """New log lines, events or a readiness snapshot are waiting in the controller."""


class GpuDirty(Coalesced):
    """A new GPU snapshot is waiting in the controller."""


class TopologyReady(Message):
    """The topology was read (once) or could not be read."""


@dataclass
class StopProgress(Message):
    """One step of a stop / relaunch (signals sent, GPU memory draining, port free, launched)."""

    progress: Progress


@dataclass
class RelaunchDone(Message):
    """The relaunch finished: `error` is None when the new server started."""

    error: str | None
    summary: str


@dataclass
class Notice(Message):
    """A one-line note for the user (a toast): `severity` is information, warning or error."""

    text: str
    severity: str = "information"
