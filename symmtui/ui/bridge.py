"""The Textual adapter of a Session: its plain messages wrapped as Textual messages, posted thread-safely.

A newer GPU sample replaces one still pending (only the latest matters); engine batches never replace
each other (they carry lines): the Session sends the next only after the app called ``batch_done``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from textual.message import Message

from symmtui.session.messages import (
    EngineBatch,
    GpuSample,
    Notice,
    SessionMessage,
    StacksTaken,
    TopologyRead,
    VerdictReached,
)
from symmtui.session.nodes import NodeMessage, NodesUpdate, NodesVerdict


@dataclass
class EngineBatchPosted(Message):
    """New log lines, events, notices and the readiness snapshot (the app acknowledges each); ``node``:
    the node of a multi-node server whose Session sent it (None: the one Session)."""

    batch: EngineBatch
    node: str | None = None


@dataclass
class GpuSamplePosted(Message):
    """A GPU sampling round with our pids and the capability; a newer one replaces a pending one."""

    sample: GpuSample

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, GpuSamplePosted)


@dataclass
class TopologyPosted(Message):
    """The topology was read (once) or could not be read."""

    topology: TopologyRead


@dataclass
class NoticePosted(Message):
    """A one-line note for the user (a toast)."""

    notice: Notice


@dataclass
class StacksPosted(Message):
    """A stacks dump of the server's processes (on the `s` key, or once when the state became STALLED)."""

    taken: StacksTaken


@dataclass
class VerdictPosted(Message):
    """The bring-up reached a verdict (the screen shows it from the batch; observers act on it)."""

    verdict: VerdictReached


@dataclass
class NodesPosted(Message):
    """A multi-node server's aggregate changed (its state, the node it names, any node's phase)."""

    verdict: NodesVerdict


def to_textual(message: SessionMessage) -> Message:
    """The Textual message that carries ``message``."""
    if isinstance(message, EngineBatch):
        return EngineBatchPosted(message)
    if isinstance(message, GpuSample):
        return GpuSamplePosted(message)
    if isinstance(message, TopologyRead):
        return TopologyPosted(message)
    if isinstance(message, StacksTaken):
        return StacksPosted(message)
    if isinstance(message, VerdictReached):
        return VerdictPosted(message)
    return NoticePosted(message)


def poster(post_message: Callable[[Message], object]) -> Callable[[SessionMessage], None]:
    """A Session ``post`` callable over an app's thread-safe ``post_message``."""

    def post(message: SessionMessage) -> None:
        post_message(to_textual(message))

    return post


def node_poster(post_message: Callable[[Message], object], head: str) -> Callable[[NodeMessage | NodesUpdate], None]:
    """A NodeSet ``post`` callable: every node's engine batches, named (the app keeps a log pane per node);
    the ``head`` node's other messages as a Session's (it samples every node's GPUs); of the other nodes,
    their notices (named) and stacks dumps; the aggregate's changes as NodesPosted."""

    def post(item: NodeMessage | NodesUpdate) -> None:
        if isinstance(item, NodesUpdate):
            post_message(NodesPosted(item.verdict))
            return
        message = item.message
        if isinstance(message, EngineBatch):
            post_message(EngineBatchPosted(message, item.node))
        elif isinstance(message, StacksTaken):  # any node's dump, named (the panel says whose)
            post_message(StacksPosted(replace(message, node=item.node)))
        elif item.node == head:
            post_message(to_textual(message))
        elif isinstance(message, Notice):
            post_message(NoticePosted(Notice(f"{item.node}: {message.text}", message.severity)))

    return post
