"""The dashboard's own messages: the Session's mailbox has mail, and its workers' progress and results."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from symmtui.launch.profilefix import ProfileFix
from symmtui.launch.report import Progress


class MailReady(Message):
    """Something arrived in the Session's mailbox (posted once until the app takes it all)."""


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
class FixPlanned(Message):
    """The profile fix for the shown diagnosis was read (None: no diagnosis has one); ``error``: why not."""

    fix: ProfileFix | None
    error: str | None = None


@dataclass
class FixApplied(Message):
    """The profile fix was written (``error`` None) and the next launch uses it."""

    fix: ProfileFix
    error: str | None = None


@dataclass
class IntentRefused(Message):
    """An intent the Session could not carry out, in one line."""

    text: str
