"""Launching, stopping and relaunching the server: profiles, process trees, history."""

from __future__ import annotations

from symmtui.launch.history import Estimate, History, HistoryEntry, eta
from symmtui.launch.profile import Profile, ProfileError, find_profile, load_profile, parse_profile
from symmtui.launch.report import Progress, RelaunchResult, Step, StopProgress, StopReport, Stranger
from symmtui.launch.state import LaunchRecord
from symmtui.launch.supervisor import LaunchBlocked, PreflightBlocked, Supervisor

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
