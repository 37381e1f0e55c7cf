"""check / diff / apply / revert of the SM120 patch on an installed SGLang or vLLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from symmtui import boundary
from symmtui.errors import InputError, UserError
from symmtui.patch.capability import Capability, key_text
from symmtui.patch.errors import PatchError, Refused, UnsupportedLayout
from symmtui.patch.judge import report as judge_report
from symmtui.patch.report import (
    MIN_MAJOR,
    ApplyResult,
    CheckReport,
    Outcome,
    RevertResult,
    State,
    TableStatus,
    symlink_problem,
)
from symmtui.patch.rewrite import patched, replace_all, unified
from symmtui.patch.scan import MAX_SOURCE_BYTES, install, real_path, scan_install, write_problem
from symmtui.patch.state import (
    drop_record,
    load_record,
    log_history,
    mark_applied,
    patch_lock,
    save_backups,
    sha256,
)

__all__ = [
    "MIN_MAJOR",
    "ApplyResult",
    "CheckReport",
    "Outcome",
    "PatchError",
    "Refused",
    "RevertResult",
    "State",
    "TableStatus",
    "UnsupportedLayout",
    "UserError",
    "apply",
    "check",
    "diff",
    "revert",
]


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
    return judge_report(scan_install(install(site, package, python)), cap, nvlink)


def diff(
    site: Path | None,
    package: str | None,
    capability: Capability | str | int | tuple[int, int],
    *,
    python: str | None = None,
) -> str:
    """The exact unified diff apply would write ("" when there is nothing to do); raises like apply."""
    cap = Capability.of(capability)
    scan = scan_install(install(site, package, python))
    report = judge_report(scan, cap, None)
    if report.state in ("applied", "present", "not-applicable"):
        return ""
    _refuse_unpatchable(report)
    return unified(scan, patched(scan, report.key))


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
    follow_symlinks: bool = False,
) -> ApplyResult:
    """Add the capability to both tables (copying the donor entry), atomically, with a backup.

    ``expected``: the report the user looked at; if the files changed since, refuse. Idempotent.
    A table file that is a symlink is refused (its target may be another package's file) unless
    ``follow_symlinks``; then the real file is written and named.
    """
    cap = Capability.of(capability)
    inst = install(site, package, python)
    with patch_lock(lock_timeout):
        scan = scan_install(inst)
        report = judge_report(scan, cap, nvlink)
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
        if report.symlink_problem and not follow_symlinks:
            raise Refused(f"{report.symlink_problem}; nothing was changed", reason="symlink")
        if report.write_problem:
            raise Refused(report.write_problem + "; nothing was changed", reason="not-writable")
        new = patched(scan, report.key)
        text = unified(scan, new)
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
            replace_all(new, scan.data, scan.real)
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
            replace_all({p: scan.data[p] for p in new}, new, scan.real)
            drop_record(record)
            raise Refused(
                f"could not record the patch ({exc.strerror}); the originals were put back",
                reason="write-failed",
            ) from exc
        notes = _history(
            {"op": "apply", "package": inst.package, "version": inst.version, "root": str(inst.root),
             "capability": str(cap), "files": [str(scan.real[p]) for p in sorted(new)]}
        )
        done = judge_report(scan_install(inst), cap, nvlink)
        return ApplyResult(
            "applied",
            f"applied: capability {key_text(report.key)} added to {len(new)} file(s) of {inst.package} "
            f"{inst.version or ''}".rstrip(),
            done,
            files=tuple(sorted(scan.real[p] for p in new)),
            diff=text,
            record_dir=Path(record.dir),
            caveats=report.caveats + notes,
            symlinks=tuple((p, r) for p, r in scan.symlinks if r in {scan.real[q] for q in new}),
        )


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
    follow_symlinks: bool = False,
) -> RevertResult:
    """Put back the original bytes symmtui saved; refuse when a file changed since (unless ``force``).

    A recorded path that is now a symlink is refused unless ``follow_symlinks`` (then its real file is
    restored and named).
    """
    inst = install(site, package, python)
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
            if boundary.regular_file(p, what="the patched file", missing_ok=True) is None:
                changed.append(f"{p} is gone")
                continue
            try:
                now = boundary.read_bytes(p, what="the patched file", max_bytes=MAX_SOURCE_BYTES)
            except InputError as exc:
                raise Refused(str(exc), reason="unreadable") from exc
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
        create: list[tuple[Path, int]] = []
        if changed and force:
            for f in record.files:
                p = Path(f.path)
                if p not in restore and not p.exists():
                    if not p.parent.is_dir():
                        raise Refused(f"{p.parent} no longer exists; cannot restore {p.name}", reason="gone")
                    restore[p] = record.backup_bytes(f)
                    current[p] = b""
                    create.append((p, f.mode))
        reals = {p: real_path(p) for p in restore}
        links = tuple((p, r) for p, r in sorted(reals.items()) if r != p)
        problem = symlink_problem(links, inst.root)
        if problem and not follow_symlinks:
            raise Refused(f"{problem}; nothing was changed", reason="symlink")
        for p, mode in create:
            p.touch(mode=mode)
        problem = write_problem(list(restore))
        if problem:
            raise Refused(problem + "; nothing was changed", reason="not-writable")
        replace_all(restore, current, reals)
        drop_record(record)
        _history({"op": "revert", "package": inst.package, "root": str(inst.root), "force": force,
                  "files": [str(reals[p]) for p in sorted(restore)]})
        return RevertResult(
            "reverted",
            f"reverted: {len(restore)} file(s) of {inst.package} restored to their original bytes",
            inst.package,
            inst.root,
            files=tuple(sorted(reals[p] for p in restore)),
            symlinks=links,
        )
