"""The Session protocol: what a front end may do with a Session (``session.core``) or a replay (``bundle.replay``).

Attach for the mailbox (the Boards come there), observe, ask an intent (``session.intents``), close. There is
no read of state: a front end lays out the Boards it is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from symmtui.session.intents import Intent
    from symmtui.session.mailbox import Mailbox, Wake
    from symmtui.session.messages import SessionMessage

T = TypeVar("T")


class SessionLike(Protocol):
    """Attach, observe, ask (intents block: ask from a worker thread), close."""

    name: str
    host: str

    @property
    def nodes(self) -> tuple[str, ...]: ...

    @property
    def named(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    def attach(self, wake: Wake) -> Mailbox: ...

    def observe(self, observer: Callable[[SessionMessage], None], *, name: str = "observer") -> None: ...

    def ask(self, intent: Intent[T]) -> T: ...

    def close(self) -> None: ...
