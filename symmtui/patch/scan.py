"""Reading an install: find it, read its table files, parse the tables, and say if they can be written."""

from __future__ import annotations

import ast
import os
import pwd
from pathlib import Path

from msgspec import Struct

from symmtui import boundary
from symmtui.errors import InputError, UserError
from symmtui.patch.errors import Refused, UnsupportedLayout
from symmtui.patch.finder import Installed, PackageNotFound, find, locate
from symmtui.patch.layouts import PACKAGES, Layout, TableSpec, layouts_for, looked_for
from symmtui.patch.parser import (
    DictTable,
    LayoutProblem,
    LookupStyle,
    find_table,
    lookup_style,
    mutations,
    parse_module,
)
from symmtui.patch.state import sha256


class Scan(Struct):
    """One install as read: its layout, the table files' bytes and modes, the parsed tables, how they are read."""

    inst: Installed
    layout: Layout
    data: dict[Path, bytes]
    modes: dict[Path, int]
    tables: dict[str, DictTable]
    lookups: dict[str, LookupStyle]
    real: dict[Path, Path]

    @property
    def symlinks(self) -> tuple[tuple[Path, Path], ...]:
        """(table file as found, real file) for each table file reached through a symlink (its own,
        or the package directory's when that was found through one)."""
        out = []
        for p, r in sorted(self.real.items()):
            shown = self.inst.link / p.relative_to(self.inst.root) if self.inst.link is not None else p
            if r != shown:
                out.append((shown, r))
        return tuple(out)

    def path(self, spec: TableSpec) -> Path:
        """The file holding ``spec``'s table."""
        return self.inst.root / spec.relpath

    @property
    def hashes(self) -> dict[str, str]:
        """sha256 of each table file, by path."""
        return {str(p): sha256(b) for p, b in self.data.items()}


MAX_SOURCE_BYTES = 64 << 20  # one table file read (a Python source file)


def real_path(path: Path) -> Path:
    """The file a write to ``path`` changes: every symlink in it resolved."""
    return Path(os.path.realpath(path))


def _read(path: Path) -> tuple[bytes, int]:
    try:
        data = boundary.read_bytes(path, what="the table file", max_bytes=MAX_SOURCE_BYTES)
        mode = path.stat().st_mode & 0o7777
    except InputError as exc:
        raise Refused(str(exc), reason="unreadable") from exc
    except OSError as exc:
        raise Refused(f"cannot read {path} ({exc.strerror})", reason="unreadable") from exc
    return data, mode


def scan_layout(inst: Installed, layout: Layout) -> Scan:
    """Read and parse ``layout``'s files under the install; LayoutProblem when a table is not in that shape."""
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
        for q, tree in trees.items():  # the table's own file and the consumer
            changed = mutations(tree, spec.name, tables[spec.role].line if q == p else -1)
            if changed:
                where = f"{q.relative_to(inst.root)} line{'s' if len(changed) > 1 else ''} "
                raise LayoutProblem(
                    f"{spec.name} is changed after its literal ({where}{', '.join(map(str, changed[:5]))}): "
                    "what it holds at run time cannot be told from the source, so symmtui cannot tell "
                    "whether capability 12 is there"
                )
    consumer = trees[inst.root / layout.consumer]
    lookups: dict[str, LookupStyle] = {spec.role: lookup_style(consumer, spec.name) for spec in layout.tables}
    return Scan(inst, layout, data, modes, tables, lookups, {p: real_path(p) for p in data})


def scan_install(inst: Installed) -> Scan:
    """The install read with the first known layout that fits; UnsupportedLayout when none does."""
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
            return scan_layout(inst, layout)
        except LayoutProblem as exc:
            problems.append(str(exc))
    raise UnsupportedLayout(
        f"{inst.package} {version} at {inst.root}: the tables are not in a shape symmtui knows "
        f"({'; '.join(problems)}); refusing to guess, nothing was changed",
        reason="unknown-layout",
    )


def owner_name(path: Path) -> str:
    """The user name owning ``path`` (``uid N`` when unnamed, ``?`` when it cannot be read)."""
    try:
        uid = path.stat().st_uid
    except OSError:
        return "?"
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def write_problem(paths: list[Path]) -> str | None:
    """Why one of ``paths`` cannot be rewritten by this user (read-only fs, permissions), None when all can."""
    for path in paths:
        real = real_path(path)
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
                owner = owner_name(target)
                return (
                    f"{target} is not writable by {me} (owner: {owner}): run symmtui as {owner}, "
                    f"the install's owner, or with sudo (sudo -E symmtui patch apply ...)"
                )
    return None


def install(site: Path | None, package: str | None, python: str | None) -> Installed:
    """The one install to work on: ``package`` (or the only one of sglang/vllm found) by site, python or ours."""
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
