"""Collapse identical stacks into groups and say where each group stands: the frames that matter first."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from symmtui.judge.ranks import compact, sort_key
from symmtui.judge.rules import RuleSet
from symmtui.stacks.model import Frame, Group, ProcDump
from symmtui.stacks.phase import engine_of, hints_for, phase_of
from symmtui.tables import enginetable


def key_packages() -> tuple[str, ...]:
    """The packages whose frames a reader looks for first: every engine's code (the engine table) and torch."""
    return (*(c for e in enginetable.table().engines for c in e.code), "torch")

_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)")
_STDLIB = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\]")
HEADLINE_FRAMES = 3
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def package_of(frame: Frame) -> str | None:
    """The installed package a frame's file lives in ("torch"), "" for the standard library, None for user code."""
    m = _SITE.search(frame.filename)
    if m is not None:
        return m.group(1).split(".")[0]
    if _STDLIB.search(frame.filename) or frame.filename.startswith("<frozen"):
        return ""
    if frame.native and frame.filename:
        return "native"
    return None


def is_key(frame: Frame) -> bool:
    pkg = package_of(frame)
    keys = key_packages()
    return pkg in keys or any(f"/{p}/" in frame.filename for p in keys)


def is_noise(frame: Frame) -> bool:
    """A library frame that says nothing about the bring-up (standard library, other packages)."""
    if is_key(frame):
        return False
    if frame.native:
        return not frame.name.startswith(("nccl", "cuda", "cu", "at::", "c10d"))
    return package_of(frame) is not None


def headline(frames: Sequence[Frame]) -> str:
    """"ncclCommInitRank ← init_process_group ← …": the innermost key frame, then the path outwards."""
    if not frames:
        return "(no frames)"
    start = next((i for i, f in enumerate(frames) if is_key(f)), None)
    if start is None:
        start = next((i for i, f in enumerate(frames) if not is_noise(f)), 0)
    picked: list[str] = []
    for f in frames[start:]:
        if is_noise(f) or (picked and f.name == "<module>"):
            continue
        if picked and picked[-1] == f.name:
            continue
        picked.append(f.name)
        if len(picked) == HEADLINE_FRAMES:
            break
    rest = len([f for f in frames[start:] if not is_noise(f)]) > len(picked)
    return " ← ".join(picked) + (" ← …" if rest else "")


def fold(frames: Sequence[Frame]) -> tuple[str, ...]:
    """The call path, innermost first, one line a frame, each run of library frames folded into one line."""
    out: list[str] = []
    run: list[Frame] = []

    def flush() -> None:
        if not run:
            return
        if len(run) == 1:
            out.append(f"{run[0].name} ({run[0].where()})")
        else:
            pkgs = sorted({package_of(f) or "stdlib" for f in run})
            out.append(f"… {len(run)} library frames ({', '.join(p or 'stdlib' for p in pkgs)})")
        run.clear()

    for f in frames:
        if is_noise(f):
            run.append(f)
            continue
        flush()
        out.append(f"{f.name} ({f.where()})")
    flush()
    return tuple(out)


def signature(frames: Sequence[Frame]) -> tuple[tuple[str, str], ...]:
    """What makes two stacks "identical": the functions and files, not the exact lines (a spinning loop moves).

    A native frame with no symbol is named by its address, which differs between processes (ASLR): it
    counts as the same unnamed frame of the same library.
    """
    return tuple((f.filename, "?" if f.native and _ADDRESS.fullmatch(f.name) else f.name) for f in frames)


def collapse(dumps: Iterable[ProcDump], log_phase: str | None = None, ruleset: RuleSet | None = None) -> list[Group]:
    """Groups of processes whose main threads stand in the same stack; the largest first.

    Each group's hints are the catalogue's hang entries for its phase (``ruleset``: the user's entries
    with the shipped ones; None: the shipped ones).
    """
    rs = ruleset if ruleset is not None else RuleSet()
    by_sig: dict[tuple[tuple[str, str], ...], list[ProcDump]] = {}
    for d in dumps:
        if d.status != "ok":
            continue
        main = d.main_thread()
        frames = main.frames if main is not None else ()
        by_sig.setdefault(signature(frames), []).append(d)
    groups: list[Group] = []
    for procs in by_sig.values():
        procs.sort(key=lambda p: (sort_key(p.rank) if p.rank else ((("~", 0)),), p.pid))
        main = procs[0].main_thread()
        frames = main.frames if main is not None else ()
        phase = phase_of(frames, log_phase)
        engine = engine_of(frames, procs[0].cmdline)
        groups.append(Group(tuple(procs), frames, headline(frames), fold(frames), phase, hints_for(phase, rs, engine),
                            labels=compact(p.label() for p in procs)))
    groups.sort(key=lambda g: (-len(g.procs), sort_key(g.procs[0].label())))
    return groups


def group_line(g: Group) -> str:
    """"7 processes (TP0-TP4, TP6, TP7) in ncclCommInitRank ← init_process_group ← … [NCCL init]"."""
    n = len(g.procs)
    who = f"{n} processes ({g.labels})" if n > 1 else g.labels
    where = f" [{g.phase}]" if g.phase else ""
    return f"{who} in {g.headline}{where}"


def summary_line(groups: Sequence[Group]) -> str:
    """All groups in one line, separated by "; "."""
    return "; ".join(group_line(g) for g in groups)
