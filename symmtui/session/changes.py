"""What changed since the last READY launch (``launch.changes``) for a CRASHED, STALLED or TIMED OUT verdict:
read once per (node, launch, state) on the engine thread, carried in the verdict."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable

from symmtui.errors import UserError
from symmtui.judge.rules import Action
from symmtui.judge.verdict import Changes, Finding, Verdict
from symmtui.launch.changes import hints_of, last_ready, restore, since_ready
from symmtui.launch.envinfo import ServerCommand
from symmtui.launch.facts import LaunchFacts, of_command
from symmtui.launch.history import History, HistoryEntry, verdict_of
from symmtui.session.node import Node


def named(findings: Iterable[Finding]) -> tuple[str, ...]:
    """The flags and variables the findings' diagnoses name (the history keeps them with the launch)."""
    return hints_of(f.diagnosis for f in findings)


def attached(pid: int) -> LaunchFacts | None:
    """The facts of a running server attached by pid (``/proc``: its words, environment, directory), read
    while it runs (at the attach: by its verdict it may be gone); None when they cannot be read."""
    command = ServerCommand.from_pid(pid)
    if command.argv is None:
        return None
    return of_command(command.argv, command.env, str(command.cwd or ""))


def changes_since(node: Node, verdict: Verdict, *, pid_facts: LaunchFacts | None = None,
                  now: float | None = None) -> tuple[Changes | None, tuple[Action, ...]]:
    """``node``'s launch against the last READY launch of its profile, worded, and the profile changes that
    would put the culprits back; (None, ()) when there is no history to compare with or it cannot be read.

    A launch of ours is its history entry (written at CRASHED and TIMED OUT; a STALLED one is built as
    it stands). A profile's log that is no launch of ours (`wait --config`) is the history's entry for that
    log file when `launch` recorded it, else the profile's command as it is now. A server attached by pid
    (no profile: ``pid_facts``, read by :func:`attached`) is compared with the last READY launch of the
    same command (program, arguments, model).
    """
    at = time.time() if now is None else now
    hints = named(verdict.findings)
    try:
        entries = History().entries()
    except UserError:
        return None, ()
    sup = node.supervisor
    record = node.record(node.generation)
    state = verdict_of(verdict.state.value)
    if sup is not None and record is not None:
        current = next((e for e in entries if e.launch_id == record.launch_id), None) or \
            sup.entry(record, state, patch=node.patch_note, named=hints)
        changes, diffs = since_ready(current, entries, hints=hints, at=at)
    elif sup is not None:
        same = os.path.realpath(node.batch_log_path) if node.batch_log_path else None
        mine = next((e for e in reversed(entries) if same is not None and os.path.realpath(e.log_path) == same), None)
        if mine is None:
            prof = sup.profile
            env = {**os.environ, **prof.env}
            argv = list(prof.argv or ())
            if argv and not prof.shell and "/" not in argv[0]:  # as a launch runs it: the program found on PATH
                argv[0] = shutil.which(argv[0], path=env.get("PATH", os.defpath)) or argv[0]
            facts = of_command(argv, env, str(prof.cwd or ""))  # no cwd: the server's own is not known
            mine = HistoryEntry("(this log)", sup.profile.command_hash, at, None, state,
                                profile_key=sup.profile.key, facts=facts)
        changes, diffs = since_ready(mine, [e for e in entries if e is not mine], hints=hints, at=at)
    elif pid_facts is not None:
        facts = pid_facts
        current = HistoryEntry("(this server)", "", at, None, state, facts=facts)
        def same_command(e: HistoryEntry) -> bool:
            return e.facts is not None and (e.facts.command, e.facts.model) == (facts.command, facts.model)

        if last_ready(current, entries, same_command) is None:
            return None, ()  # a server symmtui never brought up: nothing to say (a profile's first launch says it)
        changes, diffs = since_ready(current, entries, hints=hints, at=at, same=same_command)
    else:
        return None, ()
    return changes, restore(diffs)
