"""What the launch history records about one launch's end: the same fields whatever the front end."""

from __future__ import annotations

from msgspec import Struct

from symmtui.judge.readiness import Snapshot, State

RECORDED = (State.READY, State.CRASHED, State.TIMED_OUT)
"""States that end a launch in the history (STOPPED means we stopped watching, not that it ended)."""
CHANGED = (State.CRASHED, State.STALLED, State.TIMED_OUT)
"""Verdicts that say what changed since the last READY launch (``session.changes``)."""


class Outcome(Struct, frozen=True):
    """The history fields read from the final snapshot: verdict, cause, seconds per phase."""

    verdict: str
    cause: str | None
    phases: dict[str, float]


def outcome_of(snap: Snapshot) -> Outcome:
    """The verdict; the cause's headline (or the state's detail) unless ready; phase durations in order."""
    from symmtui.launch.history import verdict_of  # the history's module (statistics, files) on first use

    verdict = verdict_of(snap.state)
    phases: dict[str, float] = {}
    for span in snap.phases:
        dur = span.duration(snap.elapsed)
        if span.name != "ready" and dur is not None:
            phases[span.name] = round(dur, 3)
    cause = snap.cause.headline() if snap.cause is not None else (snap.detail or None)
    return Outcome(verdict, cause if verdict != "ready" else None, phases)


def patch_note(prediction: object | None, *, preflight_ran: bool) -> str | None:
    """What the history records about the SM120 patch at launch time (None: not checked)."""
    if not preflight_ran:
        return None
    if prediction is None:
        return "no crash predicted"
    outcome = getattr(prediction, "outcome", None)
    return f"predicted {outcome}" if isinstance(outcome, str) else "crash predicted"
