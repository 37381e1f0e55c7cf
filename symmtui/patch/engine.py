"""check / diff / apply / revert of the SM120 patch on an installed SGLang or vLLM."""

from __future__ import annotations

import ast
import difflib
import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from symmtui.errors import UserError
from symmtui.patch import atomic
from symmtui.patch.capability import Capability, TableKey, key_text
from symmtui.patch.finder import Installed, PackageNotFound, find, locate
from symmtui.patch.layouts import PACKAGES, Layout, TableSpec, layouts_for, looked_for
from symmtui.patch.parser import (
    DictTable,
    LayoutProblem,
    LookupStyle,
    find_table,
    lookup_style,
    parse_module,
    splice_entry,
    strip_key,
    table_values,
)
from symmtui.patch.state import (
    PatchRecord,
    drop_record,
    load_record,
    log_history,
    mark_applied,
    patch_lock,
    save_backups,
    sha256,
)

State = Literal["needed", "applied", "present", "mismatch", "donor-missing", "not-applicable"]
"""``needed``: both tables lack the key (apply fixes it); ``applied``: symmtui's patch is in place;
``present``: the release has the key in both tables already (upstream fixed); ``mismatch``: one table
has it, the other not (a hand edit); ``donor-missing``: the key to copy from is not there;
``not-applicable``: a GPU older than capability 9, where symmetric memory is off whatever the tables say."""

MIN_MAJOR = 9
"""Torch symmetric memory (multimem) starts with Hopper; the releases turn it off below 9 before any lookup."""

Outcome = Literal["crash", "off", "fine", "unknown"]
"""What a launch with ``--enable-torch-symm-mem`` on these GPUs does with the files as they are."""


class PatchError(UserError):
    """A patch operation that stopped with nothing changed; ``detail`` holds extra lines to show."""

    exit_code = 3

    def __init__(self, message: str, *, reason: str, detail: str = "", exit_code: int | None = None) -> None:
        super().__init__(message, exit_code=exit_code)
        self.reason = reason
        self.detail = detail


class UnsupportedLayout(PatchError):
    """The installed files are not a layout symmtui knows (exit 2): a refusal, not a guess."""

    exit_code = 2


class Refused(PatchError):
    """Refused with nothing changed (exit 3): permissions, a changed file, a hand edit, ..."""

    exit_code = 3


@dataclass(frozen=True)
class TableStatus:
    """One table as check found it."""

    role: str
    name: str
    file: Path
    relpath: str
    line: int
    keys: tuple[str, ...]
    has_key: bool
    has_donor: bool
    donor_source: str | None
    entry_source: str | None
    lookup: LookupStyle

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "role": self.role,
            "name": self.name,
            "file": str(self.file),
            "line": self.line,
            "keys": list(self.keys),
            "has_key": self.has_key,
            "has_donor": self.has_donor,
            "donor_source": self.donor_source,
            "entry_source": self.entry_source,
            "lookup": self.lookup,
        }


@dataclass(frozen=True)
class CheckReport:
    """Everything check learnt: per-table status, the predicted launch behaviour, caveats, file hashes."""

    package: str
    version: str | None
    root: Path
    found_by: str
    layout: str
    releases: str
    capability: Capability
    key: TableKey
    donor: TableKey
    tables: tuple[TableStatus, ...]
    state: State
    outcome: Outcome
    summary: str
    caveats: tuple[str, ...]
    hashes: Mapping[str, str]
    applied_at: str | None = None
    write_problem: str | None = None
    detail: str = ""

    @property
    def needs_patch(self) -> bool:
        """True when apply would change the files (both tables lack the key, donor present)."""
        return self.state == "needed"

    @property
    def exit_code(self) -> int:
        """check's exit code: 0 nothing to do, 1 patch needed, 3 broken in a way apply refuses to fix."""
        if self.state in ("applied", "present", "not-applicable"):
            return 0
        if self.state == "needed":
            return 1
        return 3

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (the ``--json`` output of check)."""
        return {
            "package": self.package,
            "version": self.version,
            "root": str(self.root),
            "found_by": self.found_by,
            "layout": self.layout,
            "releases": self.releases,
            "capability": str(self.capability),
            "key": self.key,
            "donor": self.donor,
            "state": self.state,
            "outcome": self.outcome,
            "summary": self.summary,
            "caveats": list(self.caveats),
            "tables": [t.to_json() for t in self.tables],
            "hashes": dict(self.hashes),
            "applied_at": self.applied_at,
            "write_problem": self.write_problem,
            "detail": self.detail,
            "exit_code": self.exit_code,
        }


@dataclass(frozen=True)
class ApplyResult:
    """What apply did: ``applied``, ``already`` (symmtui's patch is there) or ``nothing`` (upstream has it)."""

    status: Literal["applied", "already", "nothing"]
    message: str
    report: CheckReport
    files: tuple[Path, ...] = ()
    diff: str = ""
    record_dir: Path | None = None
    caveats: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "status": self.status,
            "message": self.message,
            "files": [str(f) for f in self.files],
            "diff": self.diff,
            "record_dir": str(self.record_dir) if self.record_dir else None,
            "caveats": list(self.caveats),
            "check": self.report.to_json(),
        }


@dataclass(frozen=True)
class RevertResult:
    """What revert did: ``reverted``, ``already`` (files are the originals) or ``nothing`` (no record)."""

    status: Literal["reverted", "already", "nothing"]
    message: str
    package: str
    root: Path
    files: tuple[Path, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "status": self.status,
            "message": self.message,
            "package": self.package,
            "root": str(self.root),
            "files": [str(f) for f in self.files],
        }


# --- reading an install -----------------------------------------------------------------------


@dataclass
class _Scan:
    inst: Installed
    layout: Layout
    data: dict[Path, bytes]
    modes: dict[Path, int]
    tables: dict[str, DictTable]
    lookups: dict[str, LookupStyle]

    def path(self, spec: TableSpec) -> Path:
        return self.inst.root / spec.relpath

    @property
    def hashes(self) -> dict[str, str]:
        return {str(p): sha256(b) for p, b in self.data.items()}


def _read(path: Path) -> tuple[bytes, int]:
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode & 0o7777
    except OSError as exc:
        raise Refused(f"cannot read {path} ({exc.strerror})", reason="unreadable") from exc
    return data, mode


def _scan_layout(inst: Installed, layout: Layout) -> _Scan:
    data: dict[Path, bytes] = {}
    modes: dict[Path, int] = {}
    for spec in layout.tables:
        p = inst.root / spec.relpath
        if p not in data:
            data[p], modes[p] = _read(p)
    trees: dict[Path, ast.Module] = {p: parse_module(b, str(p)) for p, b in data.items()}
    tables: dict[str, DictTable] = {}
    for spec in layout.tables:
        p = inst.root / spec.relpath
        try:
            tables[spec.role] = find_table(data[p], trees[p], spec.name, layout.key_kind)
        except LayoutProblem as exc:
            raise LayoutProblem(f"{spec.relpath}: {exc}") from exc
    consumer = trees[inst.root / layout.consumer]
    lookups: dict[str, LookupStyle] = {spec.role: lookup_style(consumer, spec.name) for spec in layout.tables}
    return _Scan(inst, layout, data, modes, tables, lookups)


def _scan(inst: Installed) -> _Scan:
    candidates = [layout for layout in layouts_for(inst.package) if layout.present_in(inst.root)]
    version = inst.version or "unknown version"
    if not candidates:
        raise UnsupportedLayout(
            f"{inst.package} {version} at {inst.root} has no symmetric-memory tables symmtui knows "
            f"(looked for {looked_for(inst.package)}); nothing was changed",
            reason="unknown-layout",
        )
    problems: list[str] = []
    for layout in candidates:
        try:
            return _scan_layout(inst, layout)
        except LayoutProblem as exc:
            problems.append(str(exc))
    raise UnsupportedLayout(
        f"{inst.package} {version} at {inst.root}: the tables are not in a shape symmtui knows "
        f"({'; '.join(problems)}); refusing to guess, nothing was changed",
        reason="unknown-layout",
    )


def _owner(path: Path) -> str:
    try:
        uid = path.stat().st_uid
    except OSError:
        return "?"
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _write_problem(paths: list[Path]) -> str | None:
    for path in paths:
        real = Path(os.path.realpath(path))
        for target in (real, real.parent):
            try:
                read_only_fs = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
            except OSError:
                read_only_fs = False
            if read_only_fs:
                return f"{target} is on a read-only file system: remount it read-write or patch a writable copy"
            if not os.access(target, os.W_OK):
                try:
                    me = pwd.getpwuid(os.geteuid()).pw_name
                except KeyError:
                    me = f"uid {os.geteuid()}"
                owner = _owner(target)
                return (
                    f"{target} is not writable by {me} (owner: {owner}): run symmtui as {owner}, "
                    f"the install's owner, or with sudo (sudo -E symmtui patch apply ...)"
                )
    return None


def _outcome_for_missing(style: LookupStyle) -> Outcome:
    if style == "subscript":
        return "crash"
    if style in ("get", "guarded"):
        return "off"
    return "unknown"


def _summary(outcome: Outcome, state: State, pkg: str, key: TableKey, where: str) -> str:
    k = key_text(key)
    if state == "applied":
        return f"patched by symmtui: capability {k} is in both tables; nothing to do"
    if state == "present":
        return f"this {pkg} release already has capability {k} in both tables; nothing to do"
    if state == "not-applicable":
        return (
            f"torch symmetric memory needs compute capability {MIN_MAJOR} or newer: {pkg} turns it off on "
            f"this GPU whatever the tables say; nothing to patch"
        )
    if outcome == "crash":
        return (
            f"with --enable-torch-symm-mem this release will crash with KeyError: {k} {where}, "
            f"seconds after launch"
        )
    if outcome == "off":
        return (
            f"with --enable-torch-symm-mem this release logs 'Device capability {key} not supported' and "
            f"silently turns torch symmetric memory off"
        )
    if outcome == "fine":
        return f"capability {k} is looked up safely; a launch will not crash on these tables"
    return f"cannot tell how this release reads the tables; a launch may fail with KeyError: {k}"


def _caveats(
    state: State, outcome: Outcome, layout: Layout, cap: Capability, nvlink: bool | None
) -> tuple[str, ...]:
    out: list[str] = []
    if state in ("needed", "applied"):
        gain = "removes the crash" if outcome == "crash" or state == "applied" else "adds the capability"
        if nvlink is False:
            out.append(
                f"This host's GPUs are linked over PCIe only: multimem/multicast needs NVLink, so the patch "
                f"{gain} but the torch symmetric-memory fast path will stay off ('multicast operations are "
                "not supported'); launching without --enable-torch-symm-mem is equivalent."
            )
        elif nvlink is None:
            out.append(
                f"Multimem/multicast needs NVLink: on a PCIe-only host the patch {gain} but the fast path "
                "may stay off."
            )
        out.append(
            f"The new entry copies key {key_text(layout.donor)} (sizes tuned for Blackwell datacenter parts); "
            f"it is not a measured tuning for capability {cap}."
        )
    if layout.key_kind == "str" and cap.minor is None:
        out.append(f"vLLM keys its tables by major.minor: assumed {key_text(cap.key('str'))} (pass 12.1 for GB10).")
    return tuple(out)


def _hand_edit(scan: _Scan, key: TableKey) -> str:
    lines: list[str] = []
    donor = scan.layout.donor
    for spec in scan.layout.tables:
        table = scan.tables[spec.role]
        src = scan.data[scan.path(spec)]
        has = table.get(key) is not None
        lines.append(f"{scan.path(spec)}:{table.line}: {spec.name} {'has' if has else 'lacks'} key {key_text(key)}")
        entry = table.get(key) or table.get(donor)
        if entry is not None:
            text = src[entry.start : entry.end].decode("utf-8", "replace")
            label = "its entry" if has else f"its key {key_text(donor)} entry"
            lines.append(f"    {label} (line {entry.line}): " + text.replace("\n", "\n    "))
    lines.append(
        "Both tables must agree: remove the hand-added entry (then run symmtui patch apply), "
        "or add the same key to the other table by hand."
    )
    return "\n".join(lines)


def _report(scan: _Scan, cap: Capability, nvlink: bool | None) -> CheckReport:
    layout = scan.layout
    key = cap.key(layout.key_kind)
    sizes, multimem = scan.tables["sizes"], scan.tables["multimem"]
    has_sizes, has_multi = sizes.get(key) is not None, multimem.get(key) is not None
    record: PatchRecord | None = load_record(scan.inst.package, scan.inst.root)
    hashes = scan.hashes
    state: State
    detail = ""
    applied_at: str | None = None
    outcome: Outcome
    when = "during distributed init (before weights load)"
    ours = (
        record is not None
        and record.status == "applied"
        and all(hashes.get(f.path) == f.patched_sha256 for f in record.files)
    )
    if cap.major < MIN_MAJOR:
        state, outcome = "not-applicable", "off"
    elif has_sizes and has_multi:
        state = "applied" if ours else "present"
        applied_at = record.time if ours and record is not None else None
        outcome = "fine"
    elif not has_sizes and not has_multi:
        missing = [s.name for s in layout.tables if scan.tables[s.role].get(layout.donor) is None]
        state = "donor-missing" if missing else "needed"
        if missing:
            detail = f"{' and '.join(missing)} lack key {key_text(layout.donor)} to copy from"
        outcome = _outcome_for_missing(scan.lookups["sizes"])
    else:
        state = "mismatch"
        detail = _hand_edit(scan, key)
        if not has_sizes:
            outcome = _outcome_for_missing(scan.lookups["sizes"])
        else:
            outcome = "crash" if scan.lookups["multimem"] == "subscript" else "fine"
            when = "at the first symmetric-memory all-reduce (CUDA graph capture or the first request)"
    if record is not None and record.status == "applied" and not ours:
        stale = (
            f"symmtui patched this install on {record.time}, but the files changed since (package upgraded "
            "or edited?): revert will refuse; apply again to patch the files as they are now"
        )
        detail = f"{detail}\n{stale}".strip()
    statuses: list[TableStatus] = []
    for spec in layout.tables:
        table = scan.tables[spec.role]
        src = scan.data[scan.path(spec)]
        d, e = table.get(layout.donor), table.get(key)
        statuses.append(
            TableStatus(
                role=spec.role,
                name=spec.name,
                file=scan.path(spec),
                relpath=spec.relpath,
                line=table.line,
                keys=tuple(key_text(k) for k in table.keys),
                has_key=e is not None,
                has_donor=d is not None,
                donor_source=src[d.value_start : d.value_end].decode("utf-8", "replace") if d else None,
                entry_source=src[e.value_start : e.value_end].decode("utf-8", "replace") if e else None,
                lookup=scan.lookups[spec.role],
            )
        )
    return CheckReport(
        package=scan.inst.package,
        version=scan.inst.version,
        root=scan.inst.root,
        found_by=scan.inst.found_by,
        layout=layout.id,
        releases=layout.releases,
        capability=cap,
        key=key,
        donor=layout.donor,
        tables=tuple(statuses),
        state=state,
        outcome=outcome,
        summary=_summary(outcome, state, scan.inst.package, key, when),
        caveats=_caveats(state, outcome, layout, cap, nvlink),
        hashes=hashes,
        applied_at=applied_at,
        write_problem=_write_problem(list(scan.data)) if state == "needed" else None,
        detail=detail,
    )


def _install(site: Path | None, package: str | None, python: str | None) -> Installed:
    if package is not None:
        if package not in PACKAGES:
            raise UserError(f"unknown package {package!r}: pass --package sglang or --package vllm")
        return find(package, site=site, python=python)
    found = locate(list(PACKAGES), site=site, python=python)
    if not found:
        where = f"under {site}" if site is not None else "on this interpreter's path"
        raise PackageNotFound(f"neither sglang nor vllm is installed {where}: pass --site DIR")
    if len(found) > 1:
        raise UserError("both sglang and vllm are installed there: pass --package sglang or --package vllm")
    return found[0]


# --- the operations ---------------------------------------------------------------------------


def check(
    site: Path | None,
    package: str | None,
    capability: Capability | str | int | tuple[int, int],
    *,
    python: str | None = None,
    nvlink: bool | None = None,
) -> CheckReport:
    """Read the installed tables (never importing the package) and say what a launch would do."""
    cap = Capability.of(capability)
    return _report(_scan(_install(site, package, python)), cap, nvlink)


def _patched(scan: _Scan, key: TableKey) -> dict[Path, bytes]:
    """New bytes for each file, each table spliced and verified."""
    out = dict(scan.data)
    layout = scan.layout
    for spec in layout.tables:
        p = scan.path(spec)
        before = out[p]
        tree = parse_module(before, str(p))
        table = find_table(before, tree, spec.name, layout.key_kind)
        after = splice_entry(before, table, key, layout.donor)
        _verify(before, after, spec, layout, key, p)
        out[p] = after
    return {p: b for p, b in out.items() if b != scan.data[p]}


def _verify(before: bytes, after: bytes, spec: TableSpec, layout: Layout, key: TableKey, path: Path) -> None:
    """Re-parse and compare: the new key equals the donor, nothing else changed, it compiles.

    Equality is checked on the ast (the new value's tree equals the donor's: same expressions, e.g.
    ``64 * MiB``), on the whole module (with the new key taken out it equals the original), and,
    where the safe evaluator can resolve the literal, on the values too.
    """

    def fail(why: str) -> Refused:
        return Refused(
            f"the patched {path.name} failed verification ({why}); nothing was changed",
            reason="verify-failed",
        )

    try:
        compile(after, str(path), "exec", dont_inherit=True)
        tree_after = ast.parse(after)
        table = find_table(after, tree_after, spec.name, layout.key_kind)
    except (SyntaxError, ValueError, LayoutProblem) as exc:
        raise fail(str(exc)) from exc
    new, donor = table.get(key), table.get(layout.donor)
    if new is None or donor is None or new.value_dump != donor.value_dump:
        raise fail("the new entry does not equal the donor entry")
    new_vals = table_values(tree_after, spec.name)  # before strip_key, which edits the tree it is given
    tree_before = ast.parse(before)
    if strip_key(tree_after, spec.name, key) != ast.dump(tree_before):
        raise fail("something besides the new entry changed")
    old_vals = table_values(tree_before, spec.name)
    if old_vals is not None and (new_vals is None or new_vals != {**old_vals, key: old_vals[layout.donor]}):
        raise fail("the evaluated table is not the original plus a copy of the donor")


def _unified(scan: _Scan, new: dict[Path, bytes]) -> str:
    chunks: list[str] = []
    base = scan.inst.root.parent
    for p in sorted(new):
        rel = p.relative_to(base)
        chunks.extend(
            difflib.unified_diff(
                scan.data[p].decode("utf-8", "surrogateescape").splitlines(keepends=True),
                new[p].decode("utf-8", "surrogateescape").splitlines(keepends=True),
                fromfile=f"a/{rel}",
                tofile=f"b/{rel}",
            )
        )
    return "".join(chunks)


def diff(
    site: Path | None,
    package: str | None,
    capability: Capability | str | int | tuple[int, int],
    *,
    python: str | None = None,
) -> str:
    """The exact unified diff apply would write ("" when there is nothing to do); raises like apply."""
    cap = Capability.of(capability)
    scan = _scan(_install(site, package, python))
    report = _report(scan, cap, None)
    if report.state in ("applied", "present", "not-applicable"):
        return ""
    _refuse_unpatchable(report)
    return _unified(scan, _patched(scan, report.key))


def _refuse_unpatchable(report: CheckReport) -> None:
    if report.state == "mismatch":
        raise Refused(
            f"one table has capability {key_text(report.key)} and the other does not (a hand edit?); "
            "refusing to patch, nothing was changed",
            reason="mismatch",
            detail=report.detail,
        )
    if report.state == "donor-missing":
        lacking = " and ".join(t.name for t in report.tables if not t.has_donor)
        raise Refused(
            f"{lacking} lack key {key_text(report.donor)} to copy from: this install's tables are not what "
            "symmtui can copy from; nothing was changed",
            reason="donor-missing",
        )


def apply(
    site: Path | None,
    package: str | None,
    capability: Capability | str | int | tuple[int, int],
    *,
    python: str | None = None,
    nvlink: bool | None = None,
    expected: CheckReport | None = None,
    lock_timeout: float = 30.0,
) -> ApplyResult:
    """Add the capability to both tables (copying the donor entry), atomically, with a backup.

    ``expected``: the report the user looked at; if the files changed since, refuse. Idempotent.
    """
    cap = Capability.of(capability)
    inst = _install(site, package, python)
    with patch_lock(lock_timeout):
        scan = _scan(inst)
        report = _report(scan, cap, nvlink)
        if expected is not None and dict(expected.hashes) != dict(report.hashes):
            raise Refused(
                f"{inst.package}'s table files changed since they were checked; nothing was changed: check again",
                reason="changed",
            )
        if report.state == "applied":
            return ApplyResult("already", f"already applied (by symmtui, {report.applied_at})", report)
        if report.state in ("present", "not-applicable"):
            return ApplyResult("nothing", report.summary, report)
        _refuse_unpatchable(report)
        prior = load_record(inst.package, inst.root)
        if prior is not None and prior.status == "applied" and all(
            report.hashes.get(f.path) == f.patched_sha256 for f in prior.files
        ):
            raise Refused(
                f"this install carries symmtui's patch for capability {prior.capability} (applied {prior.time}); "
                f"revert it first (symmtui patch revert), then apply for {cap}; nothing was changed",
                reason="other-capability",
            )
        if report.write_problem:
            raise Refused(report.write_problem + "; nothing was changed", reason="not-writable")
        new = _patched(scan, report.key)
        text = _unified(scan, new)
        try:
            record = save_backups(
                package=inst.package,
                version=inst.version,
                root=inst.root,
                layout=scan.layout.id,
                capability=str(cap),
                key=report.key,
                originals={p: (scan.data[p], scan.modes[p]) for p in new},
            )
        except OSError as exc:
            raise Refused(
                f"could not save the originals in symmtui's state directory ({exc.strerror}: {exc.filename}); "
                "nothing was changed",
                reason="write-failed",
            ) from exc
        try:
            _replace_all(new, scan.data)
        except PatchError as exc:
            if exc.reason != "partial":  # after a partial write the saved originals are the only copy
                drop_record(record)
            raise
        except BaseException:
            drop_record(record)
            raise
        try:
            record = mark_applied(record, {str(p): sha256(b) for p, b in new.items()})
        except OSError as exc:
            _replace_all({p: scan.data[p] for p in new}, new)
            drop_record(record)
            raise Refused(
                f"could not record the patch ({exc.strerror}); the originals were put back",
                reason="write-failed",
            ) from exc
        notes = _history(
            {"op": "apply", "package": inst.package, "version": inst.version, "root": str(inst.root),
             "capability": str(cap), "files": [str(p) for p in sorted(new)]}
        )
        done = _report(_scan(inst), cap, nvlink)
        return ApplyResult(
            "applied",
            f"applied: capability {key_text(report.key)} added to {len(new)} file(s) of {inst.package} "
            f"{inst.version or ''}".rstrip(),
            done,
            files=tuple(sorted(new)),
            diff=text,
            record_dir=Path(record.dir),
            caveats=report.caveats + notes,
        )


def _replace_all(new: dict[Path, bytes], expected_old: dict[Path, bytes]) -> None:
    """Stage every file, re-check the originals are unchanged, then rename; undo on failure."""
    staged: list[atomic.Staged] = []
    try:
        for p, data in sorted(new.items()):
            staged.append(atomic.stage(p, data))
    except OSError as exc:
        for s in staged:
            s.discard()
        raise Refused(
            f"could not write next to {exc.filename or 'the target'} ({exc.strerror}); nothing was changed",
            reason="write-failed",
        ) from exc
    except BaseException:
        for s in staged:
            s.discard()
        raise
    for s in staged:
        try:
            current = s.target.read_bytes()
        except OSError:
            current = b""
        if sha256(current) != sha256(expected_old[s.target]):
            for t in staged:
                t.discard()
            raise Refused(
                f"{s.target} changed while the patch was being prepared; nothing was changed: check again",
                reason="changed",
            )
    done: list[atomic.Staged] = []
    try:
        for s in staged:
            atomic.commit(s)
            done.append(s)
    except OSError as exc:
        for s in staged:
            if s not in done:
                s.discard()
        stuck: list[str] = []
        for s in done:
            try:
                atomic.write_atomic(s.target, expected_old[s.target])
            except OSError as undo_exc:
                stuck.append(f"{s.target} ({undo_exc.strerror})")
        if stuck:  # the caller keeps the saved originals: they are the only copy now
            raise PatchError(
                f"could not replace {exc.filename or 'a file'} ({exc.strerror}) and could not put back "
                f"{', '.join(stuck)}: the originals are kept in symmtui's state directory; "
                "run symmtui patch revert --force once the cause is fixed",
                reason="partial",
            ) from exc
        raise Refused(
            f"could not replace {exc.filename or 'a file'} ({exc.strerror}); the originals were put back",
            reason="write-failed",
        ) from exc


def _history(event: dict[str, Any]) -> tuple[str, ...]:
    """Append to the history log; a failure there is reported as a note, never undoes the work."""
    try:
        log_history(event)
    except OSError as exc:
        return (f"the history log could not be written ({exc.strerror}); the manifest is complete",)
    return ()


def revert(
    site: Path | None,
    package: str | None,
    *,
    python: str | None = None,
    force: bool = False,
    lock_timeout: float = 30.0,
) -> RevertResult:
    """Put back the original bytes symmtui saved; refuse when a file changed since (unless ``force``)."""
    inst = _install(site, package, python)
    with patch_lock(lock_timeout):
        record = load_record(inst.package, inst.root)
        if record is None:
            return RevertResult(
                "nothing", f"nothing to revert: symmtui has no patch recorded for {inst.root}", inst.package, inst.root
            )
        restore: dict[Path, bytes] = {}
        current: dict[Path, bytes] = {}
        changed: list[str] = []
        for f in record.files:
            p = Path(f.path)
            try:
                now = p.read_bytes()
            except FileNotFoundError:
                changed.append(f"{p} is gone")
                continue
            except OSError as exc:
                raise Refused(f"cannot read {p} ({exc.strerror})", reason="unreadable") from exc
            digest = sha256(now)
            if digest == f.original_sha256:
                continue
            if digest != f.patched_sha256:
                changed.append(f"{p} changed since symmtui patched it")
            current[p] = now
            restore[p] = record.backup_bytes(f)
        if changed and not force:
            raise Refused(
                f"{'; '.join(changed)} (package upgraded or edited?): not restoring the old bytes over it, "
                "nothing was changed; --force restores the backup anyway",
                reason="hash-mismatch",
            )
        if not restore and not changed:
            drop_record(record)
            return RevertResult("already", "already reverted: the files are the originals", inst.package, inst.root)
        if changed and force:
            for f in record.files:
                p = Path(f.path)
                if p not in restore and not p.exists():
                    if not p.parent.is_dir():
                        raise Refused(f"{p.parent} no longer exists; cannot restore {p.name}", reason="gone")
                    restore[p] = record.backup_bytes(f)
                    current[p] = b""
                    p.touch(mode=f.mode)
        problem = _write_problem(list(restore))
        if problem:
            raise Refused(problem + "; nothing was changed", reason="not-writable")
        _replace_all(restore, current)
        drop_record(record)
        _history({"op": "revert", "package": inst.package, "root": str(inst.root), "force": force,
                  "files": [str(p) for p in sorted(restore)]})
        return RevertResult(
            "reverted",
            f"reverted: {len(restore)} file(s) of {inst.package} restored to their original bytes",
            inst.package,
            inst.root,
            files=tuple(sorted(restore)),
        )
