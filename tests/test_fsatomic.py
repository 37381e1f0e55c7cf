"""symmtui.fsatomic: content and mode land whole, a failed write leaves the old file and no temp file; reads tell "none yet" from damage."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui import fsatomic

ROOT = Path(__file__).resolve().parents[1]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def wide_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_write_creates_a_user_only_file(tmp_path: Path, wide_umask: None) -> None:
    target = tmp_path / "state.json"
    fsatomic.write_atomic(target, b'{"a": 1}\n')
    assert target.read_bytes() == b'{"a": 1}\n'
    assert _mode(target) == 0o600  # not the umask's 0644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_write_replaces_content_and_sets_the_given_mode(tmp_path: Path) -> None:
    target = tmp_path / "utils.py"
    target.write_bytes(b"old\n" * 1000)
    target.chmod(0o600)
    old = os.umask(0o077)
    try:
        fsatomic.write_atomic(target, b"new\n", mode=0o644)
    finally:
        os.umask(old)
    assert target.read_bytes() == b"new\n"
    assert _mode(target) == 0o644  # the given mode, not the umask's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["utils.py"]


def test_stage_leaves_the_target_alone_until_commit(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_bytes(b"a0")
    b.write_bytes(b"b0")
    temps = [fsatomic.stage(a, b"a1", mode=0o640), fsatomic.stage(b, b"b1", mode=0o755)]
    assert (a.read_bytes(), b.read_bytes()) == (b"a0", b"b0")
    for temp in temps:
        assert temp.parent == tmp_path and temp.name.endswith(fsatomic.TEMP_SUFFIX) and temp.name.startswith(".")
    assert [temps[0].read_bytes(), temps[1].read_bytes()] == [b"a1", b"b1"]
    fsatomic.commit(temps[0], a)
    fsatomic.commit(temps[1], b)
    assert (a.read_bytes(), b.read_bytes()) == (b"a1", b"b1")
    assert (_mode(a), _mode(b)) == (0o640, 0o755)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]


def test_commit_replaces_a_symlink_itself(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_bytes(b"real")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    fsatomic.write_atomic(link, b"new")
    assert not link.is_symlink() and link.read_bytes() == b"new"
    assert real.read_bytes() == b"real"  # following links is the caller's choice (symmtui.patch.atomic)


def test_owner_is_set_or_refused_without_a_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "owned.py"
    target.write_bytes(b"old")
    if os.geteuid() == 0:
        fsatomic.write_atomic(target, b"new", mode=0o644, owner=(4321, 4322))
        st = target.stat()
        assert (st.st_uid, st.st_gid, target.read_bytes()) == (4321, 4322, b"new")
    else:
        with pytest.raises(PermissionError):
            fsatomic.write_atomic(target, b"new", mode=0o644, owner=(0, 0))
        assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["owned.py"]


def test_commit_onto_a_directory_fails_and_removes_the_temp(tmp_path: Path) -> None:
    """A directory now stands where the file goes: the rename fails, the directory and its content stay."""
    target = tmp_path / "state.json"
    target.mkdir()
    (target / "keep").write_bytes(b"keep")
    with pytest.raises(IsADirectoryError):
        fsatomic.write_atomic(target, b"new")
    assert (target / "keep").read_bytes() == b"keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_stage_into_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    """The directory was replaced by a file: nothing can be staged there, and nothing is left behind."""
    parent = tmp_path / "launch"
    parent.write_bytes(b"not a directory")
    with pytest.raises(NotADirectoryError):
        fsatomic.stage(parent / "state.json", b"new", mode=0o600)
    assert parent.read_bytes() == b"not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launch"]


def test_file_size_limit_mid_write_keeps_the_original(tmp_path: Path) -> None:
    """A real EFBIG part-way through the data (RLIMIT_FSIZE in a child, SIGXFSZ ignored): the original is
    intact and the half-written temp file is gone."""
    target = tmp_path / "utils.py"
    original = b"original\n" * 100
    target.write_bytes(original)
    script = textwrap.dedent(
        """
        import errno, resource, signal, sys
        from pathlib import Path
        from symmtui import fsatomic

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            fsatomic.write_atomic(Path(sys.argv[1]), b"x" * 65536, mode=0o644)
        except OSError as exc:
            print(errno.errorcode[exc.errno])
        else:
            print("written")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(target)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "EFBIG"
    assert target.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["utils.py"]


def test_read_json_says_none_only_when_there_is_no_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert fsatomic.read_json(path) is None
    path.write_text('{"a": 1}', encoding="utf-8")
    assert fsatomic.read_json(path) == {"a": 1}
    for bad in (b"null", b"{not json", b"\xff\xfe not text"):
        path.write_bytes(bad)
        with pytest.raises(ValueError):
            fsatomic.read_json(path)
    path.unlink()
    path.mkdir()  # a directory where the file should be: unreadable, not "none yet"
    with pytest.raises(ValueError, match="is a directory, not a regular file"):
        fsatomic.read_json(path)
    path.rmdir()
    os.mkfifo(path)  # a FIFO: refused without being opened (an open would block)
    with pytest.raises(ValueError, match="is a FIFO"):
        fsatomic.read_json(path)


def test_a_write_that_need_not_be_durable_is_still_all_or_nothing(tmp_path: Path) -> None:
    target = tmp_path / "bundle.gz"
    target.write_bytes(b"old")
    fsatomic.write_atomic(target, b"new", mode=0o600, durable=False)
    assert target.read_bytes() == b"new" and target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["bundle.gz"]  # no temp file left beside it
