"""Hostile conditions for the patch: each fault is created for real; nothing may be lost or half-written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from symmtui.patch import PatchError, Refused, apply, check, revert
from symmtui.patch import atomic as atomic_mod
from symmtui.patch import engine as engine_mod
from symmtui.patch.state import patch_lock, patches_dir
from tests.patch.conftest import FIXTURES, LAYOUTS, copy_layout, snapshot

ROOT = Path(__file__).resolve().parents[2]
NAME = "sglang-0.5.8"
UTILS, CONSUMER = FIXTURES[NAME][2]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _no_temp_files(site: Path) -> bool:
    return not [p for p in site.rglob("*") if "symmtui-tmp" in p.name or p.name.endswith(".tmp")]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return copy_layout(NAME, tmp_path)


# --- target not writable ---------------------------------------------------------------------


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A temp dir another user can traverse (pytest's tmp dirs are 0700)."""
    d = Path(tempfile.mkdtemp(prefix="symmtui-ro-"))
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _python_for_nobody() -> str | None:
    """An interpreter user 65534 can run (the venv's may live under a private home)."""
    for cand in (sys.executable, shutil.which("python3.11"), "/usr/bin/python3"):
        if not cand:
            continue
        try:
            probe = subprocess.run([cand, "-c", f"import sys; assert sys.version_info[:2] == {sys.version_info[:2]}"], capture_output=True, timeout=60, check=False, cwd="/",
                                   user=65534, group=65534)
        except PermissionError:
            continue
        if probe.returncode == 0:
            return cand
    return None


def test_read_only_target_refuses_and_says_how(shared_dir: Path) -> None:
    site = copy_layout(NAME, shared_dir)
    before = snapshot(site)
    state = shared_dir / "state"
    state.mkdir()
    cmd = [sys.executable, "-m", "symmtui", "patch", "apply", "--site", str(site), "--capability", "12"]
    if os.geteuid() == 0:
        # root writes anywhere: run the real CLI as an unprivileged user instead
        for p in [site, *site.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chown(state, 65534, 65534)
        python = _python_for_nobody()
        if python is None:
            pytest.skip("running as root and no python is executable by an unprivileged user")
        cmd[0] = python
        # the checkout may sit under a folder that user cannot enter (mktemp -d is 0700): give it a copy
        src = shared_dir / "src"
        shutil.copytree(ROOT / "symmtui", src / "symmtui", ignore=shutil.ignore_patterns("__pycache__"))
        # and of the one compiled dependency the patch verb imports (its records): the venv's own build
        shutil.copytree(Path(msgspec.__file__).parent, src / "msgspec", ignore=shutil.ignore_patterns("__pycache__"))
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=shared_dir, check=False,
                              env={**_env(XDG_STATE_HOME=str(state), HOME=str(state)), "PYTHONPATH": str(src)},
                              user=65534, group=65534)
        owner = "root"
    else:
        for p in [site / UTILS, site / CONSUMER]:
            os.chmod(p, 0o444)
        os.chmod((site / UTILS).parent, 0o555)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
                              env=_env(XDG_STATE_HOME=str(state)))
        os.chmod((site / UTILS).parent, 0o755)
        owner = ""
    assert proc.returncode == 3, proc.stderr
    assert "is not writable by" in proc.stderr and "sudo" in proc.stderr and "nothing was changed" in proc.stderr
    assert f"owner: {owner}" in proc.stderr
    assert snapshot(site) == before
    assert not list(state.rglob("manifest.json"))


# --- a file edited while apply was preparing --------------------------------------------------


def test_file_edited_during_apply_refuses(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_stage = atomic_mod.stage
    edited = b"# someone else was here\n"

    def stage_then_edit(target: Path, data: bytes) -> atomic_mod.Staged:
        staged = real_stage(target, data)
        other = site / CONSUMER
        other.write_bytes(other.read_bytes() + edited)  # a real concurrent edit
        return staged

    monkeypatch.setattr(atomic_mod, "stage", stage_then_edit)
    before = snapshot(site)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "changed" and "check again" in str(info.value)
    after = snapshot(site)
    assert after[UTILS] == before[UTILS]
    assert after[CONSUMER].endswith(edited) and b"12: [6, 8]" not in after[CONSUMER]
    assert _no_temp_files(site)
    assert not list(patches_dir().glob("sglang-*"))


def test_rename_failure_midway_puts_originals_back(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_commit = atomic_mod.commit
    calls: list[Path] = []

    def flaky_commit(staged: atomic_mod.Staged) -> None:
        calls.append(staged.target)
        if len(calls) == 2:
            staged.discard()
            raise OSError(28, "No space left on device", str(staged.target))
        real_commit(staged)

    monkeypatch.setattr(atomic_mod, "commit", flaky_commit)
    before = snapshot(site)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "write-failed" and "originals were put back" in str(info.value)
    assert snapshot(site) == before
    assert not list(patches_dir().glob("sglang-*"))


def test_rename_and_put_back_both_fail_keeps_the_originals(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second rename fails and so does putting the first file back: the saved originals are kept
    (they are the only copy), and revert --force restores them once the cause is gone."""
    real_commit, real_write = atomic_mod.commit, atomic_mod.write_atomic
    calls: list[Path] = []

    def flaky_commit(staged: atomic_mod.Staged) -> None:
        calls.append(staged.target)
        if len(calls) == 2:
            staged.discard()
            raise OSError(28, "No space left on device", str(staged.target))
        real_commit(staged)

    def failing_write(target: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(atomic_mod, "commit", flaky_commit)
    monkeypatch.setattr(atomic_mod, "write_atomic", failing_write)
    before = snapshot(site)
    with pytest.raises(PatchError) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "partial" and "revert --force" in str(info.value)
    assert snapshot(site) != before  # one file really is patched
    assert len(list(patches_dir().glob("sglang-*"))) == 1  # and the originals were not thrown away
    monkeypatch.setattr(atomic_mod, "commit", real_commit)
    monkeypatch.setattr(atomic_mod, "write_atomic", real_write)
    assert revert(site, "sglang", force=True).status == "reverted"
    assert snapshot(site) == before


# --- disk full while writing ------------------------------------------------------------------

DISK_FULL_CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from symmtui.cli import main
sys.exit(main(["patch", "apply", "--site", sys.argv[2], "--capability", "12"]))
"""


@pytest.mark.parametrize("padded", [UTILS, CONSUMER])
def test_disk_full_while_writing(site: Path, padded: str) -> None:
    """A file size limit makes the write fail with EFBIG: first or second file, nothing changes."""
    target = site / padded
    target.write_bytes(target.read_bytes() + b"# padding so the originals dwarf the manifest\n" * 200)
    before = snapshot(site)
    limit = max(len((site / f).read_bytes()) for f in (UTILS, CONSUMER)) + 8
    proc = subprocess.run([sys.executable, "-c", DISK_FULL_CHILD, str(limit), str(site)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=_env(), check=False)
    assert proc.returncode == 3, proc.stderr
    assert "File too large" in proc.stderr and "nothing was changed" in proc.stderr
    assert snapshot(site) == before
    assert _no_temp_files(site)
    assert not list(patches_dir().glob("sglang-*"))
    assert check(site, "sglang", "12").state == "needed"


def test_disk_full_while_saving_the_originals(site: Path) -> None:
    """The backups go first: when even they cannot be written, the targets are never touched."""
    before = snapshot(site)
    proc = subprocess.run([sys.executable, "-c", DISK_FULL_CHILD, "100", str(site)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=_env(), check=False)
    assert proc.returncode == 3, proc.stderr
    assert "could not save the originals" in proc.stderr and "nothing was changed" in proc.stderr
    assert snapshot(site) == before
    assert not list(patches_dir().glob("sglang-*"))


# --- revert after the package was upgraded ----------------------------------------------------


def test_revert_after_upgrade_refuses(site: Path) -> None:
    apply(site, "sglang", "12")
    # "pip install -U": the newer release's files replace the patched ones
    newer = LAYOUTS / "sglang-0.5.16"
    for rel in (UTILS, CONSUMER):
        shutil.copyfile(newer / rel, site / rel)
    upgraded = snapshot(site)
    proc = subprocess.run([sys.executable, "-m", "symmtui", "patch", "revert", "--site", str(site)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=_env(), check=False)
    assert proc.returncode == 3
    assert "changed since symmtui patched it" in proc.stderr and "--force" in proc.stderr
    assert snapshot(site) == upgraded
    report = check(site, "sglang", "12")
    assert report.outcome == "off"  # the upgrade's own behaviour, untouched
    assert "files changed since" in report.detail


# --- concurrent applies -----------------------------------------------------------------------

RACER = """
import json, os, sys
from symmtui.patch import apply
fd = os.open(sys.argv[1], os.O_RDONLY)
print("ready", flush=True)
os.read(fd, 1)
result = apply(sys.argv[2], "sglang", "12")
print(json.dumps({"status": result.status, "message": result.message}), flush=True)
"""


@pytest.mark.parametrize("round_no", [1, 2])
def test_two_processes_apply_at_once(site: Path, tmp_path: Path, round_no: int) -> None:
    fifo = tmp_path / f"go-{round_no}"
    os.mkfifo(fifo)
    holder = os.open(fifo, os.O_RDWR)  # keeps the FIFO open so the racers' opens never block
    before = snapshot(site)
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(fifo), str(site)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env())
        for _ in range(2)
    ]
    try:
        for r in racers:
            assert r.stdout is not None and r.stdout.readline().strip() == "ready"
        os.write(holder, b"go")  # both start together
        outs = [r.communicate(timeout=120) for r in racers]
    finally:
        os.close(holder)
        for r in racers:
            if r.poll() is None:
                r.kill()
                r.wait()
    assert [r.returncode for r in racers] == [0, 0], [o[1] for o in outs]
    statuses = sorted(json.loads(o[0].strip().splitlines()[-1])["status"] for o in outs)
    assert statuses == ["already", "applied"]
    assert (site / CONSUMER).read_bytes().count(b"12: [6, 8]") == 1
    assert (site / UTILS).read_bytes().count(b"    12: {") == 1
    assert revert(site, "sglang").status == "reverted"
    assert snapshot(site) == before


BUSY_CHILD = """
import sys
from symmtui.patch import apply
from symmtui.errors import UserError
try:
    apply(sys.argv[1], "sglang", "12", lock_timeout=0.3)
except UserError as exc:
    print(exc)
    sys.exit(exc.exit_code)
"""


def test_apply_while_another_holds_the_lock(site: Path) -> None:
    before = snapshot(site)
    with patch_lock():
        proc = subprocess.run([sys.executable, "-c", BUSY_CHILD, str(site)], capture_output=True, text=True,
                              timeout=120, cwd=ROOT, env=_env(), check=False)
    assert proc.returncode == 3
    assert f"another symmtui patch (pid {os.getpid()}) is still working" in proc.stdout
    assert snapshot(site) == before


# --- damaged state ----------------------------------------------------------------------------


def test_damaged_manifest_is_reported_not_ignored(site: Path) -> None:
    result = apply(site, "sglang", "12")
    assert result.record_dir is not None
    (result.record_dir / "manifest.json").write_text("{ not json")
    patched = snapshot(site)
    with pytest.raises(engine_mod.UserError) as info:
        revert(site, "sglang")
    assert "damaged" in str(info.value) and info.value.exit_code == 3
    assert snapshot(site) == patched


def test_damaged_backup_refuses_to_restore(site: Path) -> None:
    result = apply(site, "sglang", "12")
    assert result.record_dir is not None
    backup = next(result.record_dir.glob("*.orig"))
    backup.write_bytes(b"truncated")
    patched = snapshot(site)
    with pytest.raises(engine_mod.UserError) as info:
        revert(site, "sglang")
    assert "does not match its recorded hash" in str(info.value)
    assert snapshot(site) == patched


def test_interrupted_apply_record_is_harmless(site: Path) -> None:
    """An apply killed after saving backups but before renaming leaves status "applying"."""
    from symmtui.patch.state import save_backups

    before = snapshot(site)
    save_backups(package="sglang", version="0.5.8", root=(site / "sglang").resolve(), layout="x",
                 capability="12", key=12,
                 originals={(site / "sglang").resolve() / UTILS.split("/", 1)[1]: ((site / UTILS).read_bytes(), 0o644)})
    assert check(site, "sglang", "12").state == "needed"
    assert revert(site, "sglang").status == "already"
    assert apply(site, "sglang", "12").status == "applied"
    assert revert(site, "sglang").status == "reverted"
    assert snapshot(site) == before


# --- a real small file system (root only: mounts a tmpfs) -------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, unmounted afterwards; skipped where mounting is not allowed (not root)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs (the RLIMIT_FSIZE test covers disk-full elsewhere)")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True,
                          text=True, check=False, timeout=30)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True, timeout=30)


def test_disk_really_full(small_fs: Path) -> None:
    site = copy_layout(NAME, small_fs)
    fd = os.open(small_fs / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):  # fill every free block
            pass
    except OSError as exc:
        assert exc.errno == 28  # ENOSPC: the file system is full now
    finally:
        os.close(fd)
    before = snapshot(site)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "write-failed" and "No space left on device" in str(info.value)
    assert snapshot(site) == before
    assert _no_temp_files(site)
    assert not list(patches_dir().glob("sglang-*"))


def test_read_only_file_system(small_fs: Path) -> None:
    site = copy_layout(NAME, small_fs)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True, timeout=30)
    before = snapshot(site)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "not-writable" and "read-only file system" in str(info.value)
    assert snapshot(site) == before
    report = check(site, "sglang", "12")
    assert report.write_problem is not None and "read-only" in report.write_problem


def test_unusable_state_dir(site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state dir should be")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    before = snapshot(site)
    assert check(site, "sglang", "12").state == "needed"  # reading needs no state dir
    with pytest.raises(engine_mod.UserError) as info:
        apply(site, "sglang", "12")
    assert "XDG_STATE_HOME" in str(info.value) and info.value.exit_code == 3
    assert snapshot(site) == before


def test_manifest_update_fails_after_rename(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the manifest can't be marked "applied", the originals go back: no patch without a record."""

    def no_space(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine_mod, "mark_applied", no_space)
    before = snapshot(site)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "write-failed" and "originals were put back" in str(info.value)
    assert snapshot(site) == before
    assert not list(patches_dir().glob("sglang-*"))
