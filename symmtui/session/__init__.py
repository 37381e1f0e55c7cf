"""One bring-up, headless, under every front end: build a Session, attach a front end, read its messages."""

from __future__ import annotations

from symmtui.session.build import AttachSpec, for_attach, for_profile, open_dashboard, open_demo
from symmtui.session.core import Session
from symmtui.session.messages import EngineBatch, GpuSample, Notice, PatchState, SessionMessage, TopologyRead
from symmtui.session.settings import BringupSettings, bringup_settings

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
    "bringup_settings",
    "for_attach",
    "for_profile",
    "open_dashboard",
    "open_demo",
]
