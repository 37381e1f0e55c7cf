"""Profile (or command-line) -> RuleSet + ReadinessConfig, in one place, with the one set of defaults."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from msgspec import Struct

from symmtui.judge.readiness import DEFAULT_STALL, DEFAULT_TIMEOUT, ReadinessConfig
from symmtui.judge.rules import RuleSet, user_ruleset

if TYPE_CHECKING:
    from symmtui.launch.profile import Profile


class BringupSettings(Struct, frozen=True):
    """How one bring-up is judged: the rules (built-in + the user's) and the readiness limits."""

    ruleset: RuleSet
    readiness: ReadinessConfig


def bringup_settings(
    profile: Profile | None = None,
    *,
    ready: Sequence[str] = (),
    crash: Sequence[str] = (),
    timeout: float | None = None,
    stall: float | None = None,
) -> BringupSettings:
    """The profile's rules and limits, overridden by command-line values (None: not given).

    Limits: the command line's, else the profile's, else DEFAULT_TIMEOUT / DEFAULT_STALL; 0 means
    no limit. Extra patterns are added after the profile's. A bad regex is a UserError naming it.
    """
    ready_all = [*(profile.ready if profile is not None else ()), *ready]
    crash_all = [*(profile.crash if profile is not None else ()), *crash]
    if timeout is None:
        timeout = profile.timeout if profile is not None else DEFAULT_TIMEOUT
    if stall is None:
        stall = profile.stall if profile is not None else DEFAULT_STALL
    entries = profile.entries if profile is not None else ()
    ruleset = user_ruleset(ready_all, crash_all, entries)
    return BringupSettings(ruleset, ReadinessConfig(timeout=timeout or None, stall=stall or None))
