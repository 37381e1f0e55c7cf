"""Launching, stopping and relaunching the server: profiles, process trees, history.

Names are imported on first use: `symmtui wait` reads the history's verdict names without loading the
supervisor, the process tools and psutil.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from symmtui.lazy import module_getattr

if TYPE_CHECKING:
    from symmtui.launch.history import Estimate, History, HistoryEntry, eta
    from symmtui.launch.profile import Profile, ProfileError, find_profile, load_profile, parse_profile
    from symmtui.launch.report import Progress, RelaunchResult, Step, StopProgress, StopReport, Stranger
    from symmtui.launch.state import LaunchRecord
    from symmtui.launch.supervisor import LaunchBlocked, PreflightBlocked, Supervisor

_WHERE = {
    "Estimate": "history", "History": "history", "HistoryEntry": "history", "eta": "history",
    "Profile": "profile", "ProfileError": "profile", "find_profile": "profile", "load_profile": "profile",
    "parse_profile": "profile", "Progress": "report", "RelaunchResult": "report", "Step": "report",
    "StopProgress": "report", "StopReport": "report", "Stranger": "report", "LaunchRecord": "state",
    "LaunchBlocked": "supervisor", "PreflightBlocked": "supervisor", "Supervisor": "supervisor",
}

__all__ = [
    "Estimate",
    "History",
    "HistoryEntry",
    "LaunchBlocked",
    "LaunchRecord",
    "PreflightBlocked",
    "Profile",
    "ProfileError",
    "Progress",
    "RelaunchResult",
    "Step",
    "StopProgress",
    "StopReport",
    "Stranger",
    "Supervisor",
    "eta",
    "find_profile",
    "load_profile",
    "parse_profile",
]


__getattr__ = module_getattr(__name__, _WHERE)
