"""What check, apply and revert report: table status, the check report, apply and revert results."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from msgspec import Struct, field

from symmtui.patch.capability import Capability, TableKey
from symmtui.patch.parser import LookupStyle

State = Literal["needed", "applied", "present", "mismatch", "donor-missing", "not-applicable"]
"""``needed``: both tables lack the key (apply fixes it); ``applied``: symmtui's patch is in place;
``present``: the release has the key in both tables already (upstream fixed); ``mismatch``: one table
has it, the other not (a hand edit); ``donor-missing``: the key to copy from is not there;
``not-applicable``: a GPU older than capability 9, where symmetric memory is off whatever the tables say."""

MIN_MAJOR = 9
"""Torch symmetric memory (multimem) starts with Hopper; the releases turn it off below 9 before any lookup."""

Outcome = Literal["crash", "off", "fine", "unknown"]
"""What a launch with ``--enable-torch-symm-mem`` on these GPUs does with the files as they are."""


class TableStatus(Struct, frozen=True):
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
    real_file: Path | None = None
    """The file a write would change when ``file`` is (or lies under) a symlink; None when it is ``file``."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "role": self.role,
            "name": self.name,
            "file": str(self.file),
            "real_file": str(self.real_file) if self.real_file else None,
            "line": self.line,
            "keys": list(self.keys),
            "has_key": self.has_key,
            "has_donor": self.has_donor,
            "donor_source": self.donor_source,
            "entry_source": self.entry_source,
            "lookup": self.lookup,
        }


class CheckReport(Struct, frozen=True):
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
    symlinks: tuple[tuple[Path, Path], ...] = ()
    """(table file, the real file it resolves to) for each table file reached through a symlink."""
    package_link: Path | None = None
    """Where the package directory was found when it is itself a symlink to ``root``."""

    @property
    def symlink_problem(self) -> str | None:
        """Why apply/revert refuse without ``--follow-symlinks`` (a table file is a symlink), None if none is."""
        return symlink_problem(self.symlinks, self.package_link or self.root)

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
            "symlinks": [{"file": str(link), "real_file": str(real)} for link, real in self.symlinks],
            "package_link": str(self.package_link) if self.package_link else None,
            "symlink_problem": self.symlink_problem,
            "detail": self.detail,
            "exit_code": self.exit_code,
        }


class ApplyResult(Struct, frozen=True):
    """What apply did: ``applied``, ``already`` (symmtui's patch is there) or ``nothing`` (upstream has it)."""

    status: Literal["applied", "already", "nothing"]
    message: str
    report: CheckReport
    files: tuple[Path, ...] = ()
    diff: str = ""
    record_dir: Path | None = None
    caveats: tuple[str, ...] = field(default=())
    symlinks: tuple[tuple[Path, Path], ...] = ()
    """(path under the package, the real file written) for each file reached through a symlink."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (``files``: the real files written)."""
        return {
            "status": self.status,
            "message": self.message,
            "files": [str(f) for f in self.files],
            "symlinks": [{"file": str(link), "real_file": str(real)} for link, real in self.symlinks],
            "diff": self.diff,
            "record_dir": str(self.record_dir) if self.record_dir else None,
            "caveats": list(self.caveats),
            "check": self.report.to_json(),
        }


class RevertResult(Struct, frozen=True):
    """What revert did: ``reverted``, ``already`` (files are the originals) or ``nothing`` (no record)."""

    status: Literal["reverted", "already", "nothing"]
    message: str
    package: str
    root: Path
    files: tuple[Path, ...] = ()
    symlinks: tuple[tuple[Path, Path], ...] = ()
    """(recorded path, the real file restored) for each file reached through a symlink."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (``files``: the real files restored)."""
        return {
            "status": self.status,
            "message": self.message,
            "package": self.package,
            "root": str(self.root),
            "files": [str(f) for f in self.files],
            "symlinks": [{"file": str(link), "real_file": str(real)} for link, real in self.symlinks],
        }


def symlink_problem(links: tuple[tuple[Path, Path], ...], root: Path) -> str | None:
    """One line naming each symlinked file and the real file a write would change; None when there are none."""
    if not links:
        return None
    parts = []
    for link, real in links:
        where = "inside the package" if real.is_relative_to(root) else f"outside {root}"
        parts.append(f"{link} is a symlink to {real} ({where})")
    return (
        "; ".join(parts) + ": writing would change the file it points to; "
        "pass --follow-symlinks to write it anyway"
    )
