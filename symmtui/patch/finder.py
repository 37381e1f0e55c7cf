"""Locate an installed sglang / vllm and its version without importing it (importing pulls torch)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from symmtui import boundary
from symmtui.errors import InputError, UserError
from symmtui.patch.pyprobe import PROBE, context_for

MAX_META_BYTES = 4 << 20  # a METADATA, version.py or pyproject.toml read for the version


class PackageNotFound(UserError):
    """The package is not where we looked (exit 2)."""

    exit_code = 2


class Installed(Struct, frozen=True):
    """A found package: its directory, version (None when unknown) and how we found it."""

    package: str
    root: Path
    version: str | None
    found_by: str
    link: Path | None = None
    """Where the package directory was found when that is a symlink to ``root`` (another place)."""


def _link(pkgdir: Path) -> Path | None:
    """``pkgdir`` (its parent resolved) when the package directory itself is a symlink, else None."""
    return pkgdir.parent.resolve() / pkgdir.name if pkgdir.is_symlink() else None


def _root_from_spec(origin: str | None, locations: list[str]) -> tuple[Path, Path | None] | None:
    """(the package's real directory, the symlink it was found through or None)."""
    if origin and origin not in ("namespace", "built-in", "frozen") and origin.endswith(".py"):
        pkgdir = Path(origin).parent
        return pkgdir.resolve(), _link(pkgdir)
    if locations:
        return Path(locations[0]).resolve(), _link(Path(locations[0]))
    return None


def _from_site(package: str, site: Path) -> tuple[Path, Path | None] | None:
    """The package directory under a site-packages dir, a source tree, a venv, or the dir itself."""
    site = site.expanduser()
    candidates = [site / package, site / "python" / package]
    if site.name == package:
        candidates.append(site)
    for lib in ("lib", "lib64"):
        candidates.extend(sorted((site / lib).glob(f"python3*/site-packages/{package}")))
    for cand in candidates:
        if cand.is_dir():
            return cand.resolve(), (_link(cand) if cand != site else None)
    return None


def _dist_version(package: str, root: Path) -> str | None:
    parent = root.parent
    norm = re.sub(r"[-_.]+", "_", package).lower()
    for meta in sorted(parent.glob("*.dist-info/METADATA")) + sorted(parent.glob("*.egg-info/PKG-INFO")):
        dist = meta.parent.name.rsplit(".", 1)[0]
        name = re.sub(r"[-_.]+", "_", dist.split("-")[0]).lower()
        if name != norm:
            continue
        try:
            text = boundary.read_bytes(meta, what="package metadata", max_bytes=MAX_META_BYTES).decode("utf-8", "replace")
        except InputError:
            continue
        for line in text.splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
            if not line.strip():
                break
    return None


def _version_from_py(path: Path) -> str | None:
    """``__version__ = "x"`` (or ``__version__ = version = "x"``) in a file, read with ast."""
    try:
        tree = ast.parse(boundary.read_bytes(path, what="a version file", max_bytes=MAX_META_BYTES))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # InputError is a ValueError
        return None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
            names = {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            if names & {"__version__", "version"} and isinstance(stmt.value.value, str):
                return stmt.value.value
    return None


def _pyproject_version(path: Path, package: str) -> str | None:
    try:
        data = boundary.parse_toml(boundary.read_text(path, what="pyproject.toml", max_bytes=MAX_META_BYTES))
    except (InputError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project")
    if isinstance(project, dict) and project.get("name") == package and isinstance(project.get("version"), str):
        return str(project["version"])
    return None


def read_version(package: str, root: Path) -> str | None:
    """The installed version: dist-info METADATA, else ``_version.py`` / ``version.py``, else pyproject."""
    return (
        _dist_version(package, root)
        or _version_from_py(root / "_version.py")
        or _version_from_py(root / "version.py")
        or _pyproject_version(root.parent / "pyproject.toml", package)
    )


def _probe_python(
    python: str,
    packages: list[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    argv: Sequence[str] | None = None,
) -> dict[str, tuple[Path, Path | None]]:
    """Where ``python`` (running ``argv`` with ``env`` in ``cwd``) would import each package from.

    The interpreter runs isolated (``-I``): nothing in cwd, PYTHONPATH or the user site runs; those
    directories are searched afterwards by name only (see symmtui.patch.pyprobe).
    """
    full_env = {**os.environ, **env} if env else dict(os.environ)
    context = context_for(argv, full_env, cwd)
    try:
        proc = subprocess.run(
            [python, "-I", "-c", PROBE, context.argument(packages)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env=full_env,
            cwd=cwd,
        )
    except FileNotFoundError as exc:
        raise PackageNotFound(f"python {python!r} does not exist: fix the profile's python or pass --site") from exc
    except subprocess.TimeoutExpired as exc:
        raise PackageNotFound(f"{python} did not answer where packages are within 30 s; pass --site instead") from exc
    except OSError as exc:  # not executable, not a program (exec format error), a directory...
        raise PackageNotFound(
            f"could not run {python} to ask where packages are ({exc.strerror}); pass a python or --site instead"
        ) from exc
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise PackageNotFound(f"{python} failed to answer where packages are ({tail}); pass --site instead")
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as exc:
        raise PackageNotFound(f"{python} gave an unreadable answer; pass --site instead") from exc
    out: dict[str, tuple[Path, Path | None]] = {}
    if isinstance(data, dict):
        for name, info in data.items():
            if isinstance(info, dict):
                root = _root_from_spec(info.get("origin"), list(info.get("locations") or []))
                if root is not None:
                    out[str(name)] = root
    return out


def locate(
    packages: list[str],
    *,
    site: Path | None = None,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    argv: Sequence[str] | None = None,
) -> list[Installed]:
    """Every one of ``packages`` that is installed, found by ``site``, ``python`` or this interpreter.

    ``env`` (added to ours) and ``cwd`` are what ``python`` runs with (a launch profile's); ``argv`` the
    command it runs (its script directory or cwd and its PYTHONPATH are searched as the server would).
    """
    found: list[Installed] = []
    if site is not None:
        site = Path(site)
        if not site.expanduser().is_dir():
            raise PackageNotFound(f"--site {site} is not a directory")
        for pkg in packages:
            hit = _from_site(pkg, site)
            if hit is not None:
                root, link = hit
                found.append(Installed(pkg, root, read_version(pkg, root), f"--site {site}", link))
        return found
    if python is not None:
        for pkg, (root, link) in _probe_python(python, packages, env, cwd, argv).items():
            found.append(Installed(pkg, root, read_version(pkg, root), f"python {python}", link))
        return found
    for pkg in packages:
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        hit = _root_from_spec(spec.origin, list(spec.submodule_search_locations or []))
        if hit is not None:
            root, link = hit
            found.append(Installed(pkg, root, read_version(pkg, root), "this interpreter's import path", link))
    return found


def find(
    package: str,
    *,
    site: Path | None = None,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    argv: Sequence[str] | None = None,
) -> Installed:
    """One package, or PackageNotFound saying where we looked and what to pass."""
    hits = locate([package], site=site, python=python, env=env, cwd=cwd, argv=argv)
    if hits:
        return hits[0]
    where = f"under {site}" if site is not None else (f"for {python}" if python else "on this interpreter's path")
    raise PackageNotFound(
        f"{package} is not installed {where}: pass --site DIR (its site-packages or source tree)"
    )
