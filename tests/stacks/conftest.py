"""Stacks tests: real process trees (the demo server's hang story), none left behind."""

from __future__ import annotations

from tests.launch.procguard import no_leftover_processes

__all__ = ["no_leftover_processes"]
