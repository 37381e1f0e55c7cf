"""One bring-up, headless, under every front end: build a Session, attach a front end, read its messages.

Names are imported on first use (``symmtui.session.Session`` loads only the session core): the
dashboard's first paint does not wait for the patch engine or the launcher to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from symmtui.lazy import module_getattr

if TYPE_CHECKING:
    from symmtui.session.build import AttachSpec, for_attach, for_profile, open_dashboard, open_demo
    from symmtui.session.core import Session
    from symmtui.session.messages import (
        EngineBatch,
        GpuSample,
        Notice,
        PatchState,
        SessionMessage,
        TopologyRead,
        VerdictReached,
    )
    from symmtui.session.settings import BringupSettings, bringup_settings

_WHERE = {
    "AttachSpec": "build", "for_attach": "build", "for_profile": "build", "open_dashboard": "build",
    "open_demo": "build", "Session": "core", "EngineBatch": "messages", "GpuSample": "messages",
    "Notice": "messages", "PatchState": "messages", "SessionMessage": "messages", "TopologyRead": "messages", "VerdictReached": "messages",
    "BringupSettings": "settings", "bringup_settings": "settings",
}

__all__ = [
    "AttachSpec",
    "BringupSettings",
    "EngineBatch",
    "GpuSample",
    "Notice",
    "PatchState",
    "Session",
    "SessionMessage",
    "TopologyRead",
    "VerdictReached",
    "bringup_settings",
    "for_attach",
    "for_profile",
    "open_dashboard",
    "open_demo",
]


__getattr__ = module_getattr(__name__, _WHERE)
