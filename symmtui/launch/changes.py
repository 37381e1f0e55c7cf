"""What differs between two launches of the history, most likely culprit first, one short line each.

:func:`compare` (pure) puts first a flag or variable the diagnosis names (:func:`hints_of`: the catalogue
action's flag or variable, and those its words name, e.g. ``--enable-torch-symm-mem``), then versions
(engine, torch, NCCL, driver, CUDA), GPUs, the SM120 patch check, the model's files, and the rest (the
program and its arguments, other flags and variables, the directory, the host). Whatever one launch did
not record (versions not read before its verdict, no GPUs, a line of an older symmtui) is not a change.
A secret's value is never shown: it is "changed". :func:`since_ready` finds the last READY launch of the
same profile and words the whole (``judge.verdict.Changes``); :func:`restore` turns the culprits into the
profile changes that put them back as they were ("back to what worked").
"""

from __future__ import annotations

import datetime as _dt
import re
import shlex
from collections.abc import Callable, Iterable, Sequence

from msgspec import Struct

from symmtui.judge.diagnose import Diagnosis
from symmtui.judge.rules import Action
from symmtui.judge.verdict import Changes
from symmtui.launch.facts import LaunchFacts, is_cut, is_secret
from symmtui.launch.history import HistoryEntry
from symmtui.launch.timings import upgrades
from symmtui.tables import enginetable

NAMED, VERSIONS, GPUS, PATCH, MODEL, REST = range(6)
VERSION_ORDER = ("torch", "nccl", "driver", "cuda driver", "cuda (torch)")
"""The order versions are named in, after the engines' packages (the engine table's; others follow, symmtui's own last)."""
MAX_SHOWN = 160  # characters of a value or command in a line
_FLAG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*[a-z0-9]")
_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")


class Difference(Struct, frozen=True):
    """One difference: its ``rank`` (NAMED first ... REST), what it is about and its line.

    ``kind`` is "flag", "env", "version", "gpu", "patch", "model", "command", "cwd", "host" or "note";
    ``name`` the flag, variable or package; ``before`` what the earlier launch had (a flag's values, a
    variable's value; None: absent) and ``restorable`` whether the profile can be given it back."""

    rank: int
    kind: str
    name: str
    text: str
    before: tuple[str | None, ...] | None = None
    restorable: bool = False


def hints_of(diagnoses: Iterable[Diagnosis | None]) -> tuple[str, ...]:
    """The flags and variables the diagnoses name, in order: each fix's own flag or variable, then those its
    action and cause name (``drop --enable-torch-symm-mem``, ``SGLANG_ENABLE_JIT_DEEPGEMM=0``)."""
    out: list[str] = []
    for diag in diagnoses:
        if diag is None:
            continue
        fix = diag.fix
        found = [fix.flag, fix.env] if fix is not None else []
        for text in (fix.text if fix is not None else "", diag.action, diag.cause):
            found += _FLAG.findall(text) + _VARIABLE.findall(text)
        for name in found:
            if name and name not in out:
                out.append(name)
    return tuple(out)


def _shown(value: str | None) -> str:
    if value is None:
        return "(no value)"
    return value if len(value) <= MAX_SHOWN else value[:MAX_SHOWN - 1] + "…"


def _values(values: tuple[str | None, ...]) -> str:
    return ", ".join(_shown(v) for v in values)


def _flags(now: LaunchFacts, then: LaunchFacts) -> list[Difference]:
    out = []
    for name in sorted({n for n, _ in now.flags} | {n for n, _ in then.flags}):
        a, b = then.values(name), now.values(name)
        if a == b:
            continue
        secret = any(is_secret(v) for v in (*(a or ()), *(b or ())))
        if a is None:
            assert b is not None
            text = f"{name} added" if secret or all(v is None for v in b) else f"{name} {_values(b)} added"
        elif b is None:
            text = f"{name} removed" if secret or all(v is None for v in a) else f"{name} {_values(a)} removed"
        else:
            text = f"{name} changed" if secret else f"{name} {_values(a)} -> {_values(b)}"
        ok = a is None or (len(a) == 1 and not secret and not is_cut(a[0]))
        out.append(Difference(REST, "flag", name, text, a, ok))
    return out


def _env(now: LaunchFacts, then: LaunchFacts) -> list[Difference]:
    out = []
    before, after = dict(then.env), dict(now.env)
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        secret = is_secret(a) or is_secret(b)
        if a is None:
            text = f"{name} set" if secret else f"{name} set to {_shown(b)}"
        elif b is None:
            text = f"{name} unset" if secret else f"{name} unset (was {_shown(a)})"
        else:
            text = f"{name} changed" if secret else f"{name} {_shown(a)} -> {_shown(b)}"
        out.append(Difference(REST, "env", name, text, None if a is None else (a,), not secret and not is_cut(a)))
    return out


def _version_key(name: str) -> tuple[int, str]:
    order = (*enginetable.table().packages(), *VERSION_ORDER)
    if name == "symmtui":
        return (len(order) + 1, name)
    return (order.index(name) if name in order else len(order), name)


def _versions(now: HistoryEntry, then: HistoryEntry) -> list[Difference]:
    found = sorted(upgrades(then.versions, now.versions), key=lambda u: _version_key(u[0]))
    return [Difference(VERSIONS, "version", name, f"{name} {a or 'absent'} -> {b or 'absent'}")
            for name, a, b in found]


def _ranges(indexes: Sequence[int]) -> str:
    """``0``, ``0-7``, ``0, 2-3``."""
    parts: list[str] = []
    start = prev = indexes[0]
    for i in [*indexes[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)


def _gpus(now: LaunchFacts, then: LaunchFacts) -> list[Difference]:
    if not now.gpus or not then.gpus:
        return []  # not read on one side: not a change

    def census(facts: LaunchFacts) -> str:
        names: dict[str, int] = {}
        for g in facts.gpus:
            names[g.name or "unknown"] = names.get(g.name or "unknown", 0) + 1
        return ", ".join(f"{n} x {name}" for name, n in names.items())

    if census(now) != census(then):
        return [Difference(GPUS, "gpu", "GPUs", f"GPUs {census(then)} -> {census(now)}")]
    by = {g.index: g for g in then.gpus}
    changed: dict[str, list[int]] = {}
    for g in now.gpus:
        old = by.get(g.index)
        if old is None:
            continue
        if old.capability and g.capability and old.capability != g.capability:
            changed.setdefault(f"sm {old.capability} -> {g.capability}", []).append(g.index)
        if old.uuid and g.uuid and old.uuid != g.uuid:
            changed.setdefault("another card (its UUID changed)", []).append(g.index)
    return [Difference(GPUS, "gpu", "GPUs", f"GPU{'s' if len(ix) > 1 else ''} {_ranges(sorted(ix))}: {what}")
            for what, ix in changed.items()]


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _model(now: LaunchFacts, then: LaunchFacts) -> list[Difference]:
    if now.model != then.model:
        if now.model is None or then.model is None:
            return []  # one command named no model the way we read it: the flags say the rest
        return [Difference(MODEL, "model", "model", f"model {_shown(then.model)} -> {_shown(now.model)}")]
    out = []
    before = {name: (size, mtime) for name, size, mtime in then.files}
    after = {name: (size, mtime) for name, size, mtime in now.files}
    for name in [*before, *(n for n in after if n not in before)]:
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        if a is None:
            text = f"model {name} appeared"
        elif b is None:
            text = f"model {name} is gone"
        else:
            how = [f"mtime {_when(a[1])} -> {_when(b[1])}"] if a[1] != b[1] else []
            how += [f"size {a[0]} -> {b[0]} bytes"] if a[0] != b[0] else []
            text = f"model {name} changed ({', '.join(how)})"
        out.append(Difference(MODEL, "model", name, text))
    return out


def _rest(now: LaunchFacts, then: LaunchFacts) -> list[Difference]:
    out = []
    if now.command != then.command:
        a, b = _shown(shlex.join(then.command)), _shown(shlex.join(now.command))
        out.append(Difference(REST, "command", "command", f"command {a} -> {b}"))
    out += _flags(now, then) + _env(now, then)
    for kind, a, b in (("cwd", then.cwd, now.cwd), ("host", then.host, now.host)):
        if a and b and a != b:
            out.append(Difference(REST, kind, kind, f"{kind} {_shown(a)} -> {_shown(b)}"))
    if now.more or then.more:
        out.append(Difference(REST, "note", "", "(a command or its variables were longer than the history keeps: "
                                                "the rest was not compared)"))
    return out


def compare(now: HistoryEntry, then: HistoryEntry, *, hints: Sequence[str] = ()) -> list[Difference]:
    """What differs in ``now`` from ``then``, ordered: what ``hints`` name (in their order), versions, GPUs,
    the patch check, the model's files, the rest."""
    out = _versions(now, then)
    if now.patch is not None and then.patch is not None and now.patch != then.patch:
        out.append(Difference(PATCH, "patch", "patch", f"SM120 patch check: {then.patch} -> {now.patch}"))
    a, b = then.facts, now.facts
    if a is not None and b is not None:
        out += _gpus(b, a) + _model(b, a) + _rest(b, a)
    else:
        who = "the earlier launch" if a is None else "this launch"
        out.append(Difference(REST, "note", "", f"({who} kept no command or variables (an older symmtui): "
                                                "versions compared only)"))
    order = {name: i for i, name in enumerate(hints)}
    named = [d for d in out if d.kind in ("flag", "env") and d.name in order]
    named = sorted(named, key=lambda d: order[d.name])
    rest = [d for d in out if d not in named]
    return [*(Difference(NAMED, d.kind, d.name, d.text, d.before, d.restorable) for d in named),
            *sorted(rest, key=lambda d: d.rank)]


def ago(seconds: float) -> str:
    """``40 s ago``, ``12 min ago``, ``20 h ago``, ``3 days ago``."""
    s = max(0.0, seconds)
    if s < 60:
        return f"{s:.0f} s ago"
    if s < 3600:
        return f"{s // 60:.0f} min ago"
    if s < 48 * 3600:
        return f"{s // 3600:.0f} h ago"
    return f"{s // 86400:.0f} days ago"


def last_ready(now: HistoryEntry, entries: Sequence[HistoryEntry],
               same: Callable[[HistoryEntry], bool]) -> HistoryEntry | None:
    """The latest READY launch that started before ``now`` and is ``same`` (its profile, its command)."""
    ready = [e for e in entries if e.verdict == "ready" and e.launch_id != now.launch_id and e.start < now.start
             and same(e)]
    return max(ready, key=lambda e: e.start, default=None)


LAST_READY = "the last READY launch"


def worded(diffs: Sequence[Difference], then: HistoryEntry, now: float, *, label: str = LAST_READY) -> Changes:
    """The comparison as the verdict carries it: which launch (``label``) and when, then the lines."""
    when = f"{_when(then.start)} ({ago(now - then.start)})"
    if not diffs:
        return Changes(f"nothing symmtui keeps differs from {label}, {when} (command, variables, "
                       "versions, GPUs, model files)")
    return Changes(f"since {label}, {when}", tuple(d.text for d in diffs))


NO_READY = "no READY launch of this {what} to compare with"


def since_ready(now: HistoryEntry, entries: Sequence[HistoryEntry], *, hints: Sequence[str], at: float,
                same: Callable[[HistoryEntry], bool] | None = None,
                what: str = "profile") -> tuple[Changes, list[Difference]]:
    """``now`` against the last READY launch ``same`` calls its own (default: of its profile), worded;
    with the differences (for :func:`restore`)."""
    if same is None:
        same = lambda e: e.profile_key == now.profile_key  # noqa: E731
    then = last_ready(now, entries, same)
    if then is None:
        return Changes(NO_READY.format(what=what)), []
    diffs = compare(now, then, hints=hints)
    return worded(diffs, then, at), diffs


def restore(diffs: Sequence[Difference]) -> tuple[Action, ...]:
    """The profile changes that put the culprits (the differences the diagnosis names) back as the READY
    launch had them; none when a culprit cannot be given back (a secret, a value kept in part, a flag
    given several times)."""
    out: list[Action] = []
    for d in diffs:
        if d.rank != NAMED:
            continue
        if not d.restorable:
            return ()
        was = d.before
        if d.kind == "flag":
            if was is None:
                out.append(Action("flag_remove", f"remove {d.name} (the READY launch ran without it)", flag=d.name))
            else:
                value = was[0] or ""
                said = f"{d.name} {value}".strip()
                out.append(Action("flag_add", f"give {said} again (as the READY launch)", flag=d.name, value=value))
        elif d.kind == "env":
            if was is None:
                out.append(Action("env_unset", f"unset {d.name} (the READY launch ran without it)", env=d.name))
            else:
                out.append(Action("env", f"set {d.name}={was[0]} again (as the READY launch)", env=d.name,
                                  value=was[0] or ""))
    return tuple(out)
