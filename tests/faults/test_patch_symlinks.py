"""A table file reached through a symlink: named as the real file everywhere, written only with --follow-symlinks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from symmtui.patch import Refused, apply, check, diff, revert
from symmtui.patch import atomic as atomic_mod
from tests.patch.conftest import FIXTURES, copy_layout, snapshot

NAME = "sglang-0.5.8"
UTILS, CONSUMER = FIXTURES[NAME][2]


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """(site, the other package's real file): the site's torch_symm_mem.py is a symlink into another package."""
    site = copy_layout(NAME, tmp_path)
    other = tmp_path / "other-venv" / "site-packages" / "otherpkg"
    other.mkdir(parents=True)
    real = other / "torch_symm_mem.py"
    shutil.move(str(site / CONSUMER), real)
    (site / CONSUMER).symlink_to(real)
    return site, real


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "symmtui", "patch", *args], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def test_apply_refuses_a_symlink_out_of_the_package_and_changes_nothing(linked: tuple[Path, Path]) -> None:
    site, real = linked
    before, other_before = snapshot(site), real.read_bytes()
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    msg = str(info.value)
    assert info.value.reason == "symlink" and info.value.exit_code == 3
    assert str(real) in msg and "--follow-symlinks" in msg and "outside" in msg and "nothing was changed" in msg
    assert snapshot(site) == before and real.read_bytes() == other_before and (site / CONSUMER).is_symlink()
    res = _cli("apply", "--site", str(site), "--package", "sglang", "--capability", "12")
    assert res.returncode == 3 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("symmtui: error: ") and str(real) in lines[0]
    assert "--follow-symlinks" in lines[0]
    assert real.read_bytes() == other_before


def test_check_and_diff_name_the_real_file(linked: tuple[Path, Path]) -> None:
    site, real = linked
    report = check(site, "sglang", "12")
    assert report.state == "needed" and report.symlinks == ((site.resolve() / CONSUMER, real),)
    assert report.symlink_problem is not None and str(real) in report.symlink_problem
    assert [t.real_file for t in report.tables] == [None, real]
    text = diff(site, "sglang", "12")
    assert f"is a symlink: the file this changes is {real}" in text
    out = _cli("check", "--site", str(site), "--package", "sglang", "--capability", "12")
    assert out.returncode == 1 and f"the real file is {real}" in out.stdout and "--follow-symlinks" in out.stdout
    doc = json.loads(_cli("check", "--site", str(site), "--package", "sglang", "--capability", "12",
                          "--json").stdout)
    assert doc["results"][0]["symlinks"] == [{"file": str(site.resolve() / CONSUMER), "real_file": str(real)}]


def test_follow_symlinks_writes_the_real_file_and_names_it(linked: tuple[Path, Path]) -> None:
    site, real = linked
    original = real.read_bytes()
    res = _cli("apply", "--site", str(site), "--package", "sglang", "--capability", "12", "--follow-symlinks")
    assert res.returncode == 0, res.stderr
    assert f"changed {real}" in res.stdout and f"through the symlink {site.resolve() / CONSUMER}" in res.stdout
    assert (site / CONSUMER).is_symlink() and b"12: [" in real.read_bytes()
    assert [p.name for p in real.parent.iterdir()] == [real.name]  # no temp file left beside it
    assert check(site, "sglang", "12").state == "applied"
    with pytest.raises(Refused) as info:
        revert(site, "sglang")
    assert info.value.reason == "symlink" and str(real) in str(info.value)
    assert b"12: [" in real.read_bytes()
    done = revert(site, "sglang", follow_symlinks=True)
    assert done.status == "reverted" and real in done.files and (site / CONSUMER).is_symlink()
    assert real.read_bytes() == original


def test_a_symlinked_directory_is_a_symlink_too(tmp_path: Path) -> None:
    """The tables' directory itself links into another package: both files are named by their real path."""
    site = copy_layout(NAME, tmp_path)
    comms = (site / UTILS).parent
    other = tmp_path / "vendored" / "device_communicators"
    other.parent.mkdir()
    shutil.move(str(comms), other)
    comms.symlink_to(other, target_is_directory=True)
    before = snapshot(other)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert str(other / "all_reduce_utils.py") in str(info.value) and str(other / "torch_symm_mem.py") in str(info.value)
    assert snapshot(other) == before
    assert apply(site, "sglang", "12", follow_symlinks=True).files == (
        other / "all_reduce_utils.py", other / "torch_symm_mem.py")


def test_a_package_directory_linked_into_another_install(tmp_path: Path) -> None:
    """``--site`` holds ``sglang`` as a symlink to another install's package: named, refused, then written."""
    other = copy_layout(NAME, tmp_path / "other-install")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sglang").symlink_to(other / "sglang", target_is_directory=True)
    before = snapshot(other)
    report = check(site, "sglang", "12")
    assert report.package_link == site.resolve() / "sglang" and report.root == (other / "sglang").resolve()
    assert report.symlinks and all(real.is_relative_to(other.resolve()) for _, real in report.symlinks)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "symlink" and str((other / UTILS).resolve()) in str(info.value)
    assert "outside" in str(info.value) and snapshot(other) == before
    out = _cli("check", "--site", str(site), "--package", "sglang", "--capability", "12")
    assert f"found through the symlink {site.resolve() / 'sglang'}" in out.stdout
    done = apply(site, "sglang", "12", follow_symlinks=True)
    assert done.status == "applied" and set(done.files) == {(other / f).resolve() for f in (UTILS, CONSUMER)}
    assert len(done.symlinks) == 2 and (site / "sglang").is_symlink()


def test_a_link_planted_after_the_check_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table file swapped for a symlink between the scan and the write: refused, the link's target untouched."""
    site = copy_layout(NAME, tmp_path)
    victim = tmp_path / "victim.py"
    victim.write_bytes((site / CONSUMER).read_bytes())
    real_stage = atomic_mod.stage

    def swap_then_stage(target: Path, data: bytes) -> atomic_mod.Staged:
        if target.name == Path(CONSUMER).name and not target.is_symlink():
            target.unlink()
            target.symlink_to(victim)
        return real_stage(target, data)

    monkeypatch.setattr(atomic_mod, "stage", swap_then_stage)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "changed" and str(victim) in str(info.value)
    assert b"12: [" not in victim.read_bytes() and b"12: [" not in (site / UTILS).read_bytes()
    assert not [p for p in tmp_path.rglob("*.symmtui.tmp")]
