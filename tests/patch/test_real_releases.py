"""The patch against real SGLang / vLLM wheels from PyPI: check -> apply -> check -> revert, byte-exact.

Downloads are cached in ``$SYMMTUI_TEST_CACHE`` or ``~/.cache/symmtui-test-downloads`` (not an XDG dir:
the suite isolates those per test). Only the table files and the METADATA are unpacked, into a temp
dir. Without PyPI (and no cached wheel) each case skips, saying why.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from symmtui.patch import apply, check, revert
from symmtui.patch.layouts import layouts_for
from symmtui.patch.parser import table_values

# one worker: the cases share the download cache (pip download into one directory)
pytestmark = [pytest.mark.network, pytest.mark.xdist_group("real-releases")]

CACHE = Path(os.environ.get("SYMMTUI_TEST_CACHE") or Path.home() / ".cache" / "symmtui-test-downloads")

# requirement -> (package, the outcome we know for capability 12, or None for "the newest": any known one)
RELEASES: dict[str, tuple[str, str | None]] = {
    "sglang==0.5.3": ("sglang", "crash"),
    "sglang==0.5.8": ("sglang", "crash"),
    "sglang": ("sglang", None),
    "vllm": ("vllm", None),
}


def _cached(package: str, version: str | None) -> list[Path]:
    pattern = f"{package}-{version}-*.whl" if version else f"{package}-*.whl"
    return sorted(CACHE.glob(pattern), key=lambda p: p.stat().st_mtime)


def _wheel(requirement: str) -> Path:
    """The wheel for ``requirement``: from the cache when pinned and present, else via pip download."""
    package, _, version = requirement.partition("==")
    if version and _cached(package, version):
        return _cached(package, version)[-1]
    CACHE.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
         "--progress-bar", "off", "-d", str(CACHE), requirement],
        capture_output=True, text=True, timeout=1800, check=False,
    )
    saved = [line for line in proc.stdout.splitlines() if line.strip().startswith(("Saved ", "File was already"))]
    if proc.returncode != 0 or not saved:
        fallback = _cached(package, version or None)
        if fallback and not version:
            return fallback[-1]  # offline: the newest we downloaded before
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"PyPI unreachable or {requirement} not downloadable: {why}")
    name = saved[-1].split()[-1]
    path = Path(name) if os.path.isabs(name) else CACHE / Path(name).name
    return path if path.is_file() else _cached(package, version or None)[-1]


def _unpack(wheel: Path, package: str, dest: Path) -> Path:
    wanted = {f"{package}/{spec.relpath}" for layout in layouts_for(package) for spec in layout.tables}
    with zipfile.ZipFile(wheel) as zf:
        members = [n for n in zf.namelist() if n in wanted or (n.endswith(".dist-info/METADATA") and "/" in n)]
        zf.extractall(dest, members=[m for m in members if m.count("/") == 1 or m in wanted])
    return dest


def _snapshot(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("requirement", list(RELEASES))
def test_real_release_roundtrip(requirement: str, tmp_path: Path) -> None:
    package, known = RELEASES[requirement]
    wheel = _wheel(requirement)
    site = _unpack(wheel, package, tmp_path / "site")
    before = _snapshot(site)
    cap = "12" if package == "sglang" else "12.0"
    report = check(site, package, cap)
    if "==" in requirement:
        assert report.version == requirement.split("==")[1]
    assert report.layout in {layout.id for layout in layouts_for(package)}
    if known is not None:
        assert report.outcome == known
    if report.state == "present":  # a release that fixed it upstream: nothing to do, nothing touched
        assert apply(site, package, cap).status == "nothing"
        assert _snapshot(site) == before
        return
    assert report.state == "needed" and report.outcome in ("crash", "off")
    result = apply(site, package, cap)
    assert result.status == "applied" and len(result.files) == 2
    donor = report.donor
    for status, path in zip(report.tables, result.files, strict=False):
        values = table_values(ast.parse(status.file.read_bytes()), status.name)
        assert values is not None and values[report.key] == values[donor], path
        compile(status.file.read_bytes(), str(status.file), "exec")
    after = check(site, package, cap)
    assert after.state == "applied" and after.outcome == "fine"
    assert apply(site, package, cap).status == "already"
    assert revert(site, package).status == "reverted"
    assert _snapshot(site) == before
