"""The CLI boundary: hostile paths, numbers, strings, files and directories, each built for real and
fed to the real CLI; every one ends as one `symmtui: error:` line with a documented exit code."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from symmtui.errors import UserError
from symmtui.ui.themes import load_themes
from tests.faults.hostile_kit import one_error_line, run_cli
from tests.patch.conftest import FIXTURES, LAYOUTS


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "server.log"
    os.mkfifo(path)
    return path


def test_scan_of_a_fifo_without_writer_does_not_hang(fifo: Path) -> None:
    line = one_error_line(run_cli("scan", str(fifo), timeout=60))
    assert "FIFO" in line and "save a pipe's output to a file" in line


def test_scan_of_a_pipe_is_refused() -> None:
    r, w = os.pipe()
    try:  # `producer | symmtui scan /dev/stdin`
        line = one_error_line(run_cli("scan", "/dev/stdin", stdin=r, timeout=60))
    finally:
        os.close(r)
        os.close(w)
    assert "FIFO" in line


def test_scan_of_a_file_that_cannot_be_read() -> None:
    line = one_error_line(run_cli("scan", "/proc/self/mem", timeout=60))  # regular, but reading is EIO
    assert "reading it failed" in line


def test_scan_of_dev_zero_is_not_an_empty_log() -> None:
    line = one_error_line(run_cli("scan", "/dev/zero", timeout=60))
    assert "character device" in line and "empty" not in line


@pytest.mark.parametrize("target", ["/dev/zero", "fifo.json", "dir.json"])
def test_gpus_standin_that_is_not_a_file(tmp_path: Path, target: str) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    path = target if target.startswith("/") else str(tmp_path / target)
    line = one_error_line(run_cli("gpus", "--standin", path, timeout=60))
    assert "--standin" in line and "not a regular file" in line


def test_wait_on_a_fifo_log_is_refused(fifo: Path) -> None:
    line = one_error_line(run_cli("wait", "--log", str(fifo), "--timeout", "1", timeout=60))
    assert "FIFO" in line


@pytest.mark.parametrize(
    "args",
    [
        ("gpus", "--watch", "--interval", "1e308"),
        ("gpus", "--interval", "nan"),
        ("wait", "--log", "x.log", "--pid", "99999999999"),
        ("wait", "--log", "x.log", "--pid", "-1"),
        ("wait", "--log", "x.log", "--timeout", "inf"),
        ("wait", "--log", "x.log", "--stall", "-5"),
        ("wait", "--log", "x.log", "--timeout", "1e308"),
        ("launch", "--timeout", "nan"),
        ("stop", "--grace", "1e400"),
        ("stop", "--kill-pid", "0"),
        ("demo", "--speed", "inf"),
        ("demo", "--speed", "-1"),
    ],
)
def test_numbers_out_of_range(tmp_path: Path, args: tuple[str, ...]) -> None:
    line = one_error_line(run_cli(*args, cwd=tmp_path, timeout=60))
    assert f"argument {args[-2]}" in line and args[-1][:5] in line


def test_a_huge_value_is_not_echoed(tmp_path: Path) -> None:
    for args in (("--theme", "x" * 100_000, "--log", "x.log"), ("patch", "y" * 100_000),
                 ("scan", "z" * 100_000)):
        line = one_error_line(run_cli(*args, cwd=tmp_path, timeout=60))
        assert len(line) < 300 and ("characters" in line or "100000 bytes" in line)


@pytest.mark.parametrize("home", ["dev-null", "state-file"])
def test_unusable_state_dir(tmp_path: Path, home: str) -> None:
    profile = tmp_path / "symmtui.toml"
    profile.write_text(f'[server]\ncommand = "sleep 30"\nlog_dir = "{tmp_path}/logs"\n')
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("keep me")
    env = ({"HOME": "/dev/null", "XDG_STATE_HOME": ""} if home == "dev-null"
           else {"XDG_STATE_HOME": str(blocker)})
    for verb in ("launch", "stop"):
        line = one_error_line(run_cli(verb, "--config", str(profile), env=env, cwd=tmp_path, timeout=60))
        assert "state directory" in line and "XDG_STATE_HOME" in line
    assert blocker.read_text() == "keep me"  # nothing half-written
    assert not (tmp_path / "logs").exists()  # nothing launched


def test_config_dir_that_is_not_a_directory(tmp_path: Path) -> None:
    not_dir = tmp_path / "config"
    not_dir.write_text("")
    line = one_error_line(run_cli("launch", env={"XDG_CONFIG_HOME": str(not_dir)}, cwd=tmp_path, timeout=60))
    assert "no launch profile" in line


def test_config_dir_that_cannot_be_looked_into(tmp_path: Path) -> None:
    """An XDG_CONFIG_HOME that stat cannot pass (a symlink loop: unreadable even for root)."""
    loop = tmp_path / "config"
    loop.symlink_to(loop)
    line = one_error_line(run_cli("launch", env={"XDG_CONFIG_HOME": str(loop)}, cwd=tmp_path, timeout=60))
    assert "cannot look for a profile there" in line and "XDG_CONFIG_HOME" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder: permissions cannot be taken away")
def test_unreadable_config_dir(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    (cfg / "symmtui").mkdir(parents=True)
    (cfg / "symmtui" / "symmtui.toml").write_text('[server]\ncommand = "sleep 1"\n')
    (cfg / "symmtui").chmod(0)
    try:
        line = one_error_line(run_cli("launch", env={"XDG_CONFIG_HOME": str(cfg)}, cwd=tmp_path, timeout=60))
    finally:
        (cfg / "symmtui").chmod(0o700)
    assert "Permission denied" in line and "XDG_CONFIG_HOME" in line


def test_profile_nested_thousands_deep(tmp_path: Path) -> None:
    profile = tmp_path / "deep.toml"
    profile.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    line = one_error_line(run_cli("wait", "--config", str(profile), cwd=tmp_path, timeout=60))
    assert "nested too deep" in line and "deep.toml" in line


@pytest.mark.parametrize(("size", "words"), [(2_000_000, "larger than"), (200_000, "characters long")])
def test_huge_command_string_fails_fast(tmp_path: Path, size: int, words: str) -> None:
    profile = tmp_path / "symmtui.toml"
    profile.write_text(f'[server]\ncommand = "python3 -c pass {"a" * size}"\nlog_dir = "{tmp_path}/l"\n')
    line = one_error_line(run_cli("launch", "--config", str(profile), cwd=tmp_path, timeout=60))
    assert words in line


def _theme_dir(tmp_path: Path, name: str, data: bytes) -> Path:
    folder = tmp_path / "themes"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b'name = "t"\nprimary = "#112233"\n# caf\xe9\n', "not UTF-8"),
        (b'name = "t"\nprimary = "#112233"\n[variables]\nlog-crashh = "#FF0000"\n', "'log-crashh'"),
        (b"a = " + b"[" * 5000 + b"]" * 5000, "nested too deep"),
        (b'name = "' + b"n" * (300 << 10) + b'"\n', "larger than"),
    ],
)
def test_bad_theme_file(tmp_path: Path, data: bytes, words: str) -> None:
    folder = _theme_dir(tmp_path, "mine.toml", data)
    with pytest.raises(UserError) as info:
        load_themes([folder])
    msg = str(info.value)
    assert words in msg and "mine.toml" in msg and "\n" not in msg and len(msg) < 400


def test_theme_file_that_is_a_fifo(tmp_path: Path) -> None:
    folder = tmp_path / "themes"
    folder.mkdir()
    os.mkfifo(folder / "pipe.toml")
    with pytest.raises(UserError, match="FIFO"):
        load_themes([folder])


def test_patch_check_into_a_closed_pipe_keeps_its_exit_code(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(LAYOUTS / "sglang-0.5.8", site)
    r, w = os.pipe()
    os.close(r)  # `symmtui patch check | true`: the reader is gone before the first write
    try:
        res = run_cli("patch", "check", "--site", str(site), "--capability", "12", stdout=w, timeout=60)
    finally:
        os.close(w)
    assert res.returncode == 1, res.stderr  # "patch needed", as with a reader
    assert res.stderr == b""


def test_dashboard_without_a_terminal_exits_at_once(tmp_path: Path) -> None:
    for args in (("--log", str(tmp_path / "x.log")), ("demo", "--speed", "10")):
        r = run_cli(*args, cwd=tmp_path, timeout=60)
        line = one_error_line(r)
        assert r.returncode == 2 and "needs a terminal" in line
        assert r.stdout == b""  # no escape sequences written into the pipe


def test_table_changed_after_its_literal_is_not_nothing_to_do(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(LAYOUTS / "sglang-0.5.8", site)
    table_file = site / FIXTURES["sglang-0.5.8"][2][0]
    ok = run_cli("patch", "apply", "--site", str(site), "--capability", "12", timeout=60)
    assert ok.returncode == 0, ok.stderr
    with table_file.open("a") as f:
        f.write("\ndel TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[12]\n")
    r = run_cli("patch", "check", "--site", str(site), "--capability", "12", timeout=60)
    assert r.returncode != 0, r.stdout
    text = (r.stdout + r.stderr).decode()
    assert "changed after its literal" in text and "cannot tell" in text and "nothing to do" not in text


def test_an_unexpected_exception_is_one_line_unless_debugging(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from symmtui import boundary

    def bug() -> int:
        return {}["missing"]  # type: ignore[no-any-return]

    monkeypatch.delenv(boundary.DEBUG_ENV, raising=False)
    assert boundary.run_checked(bug) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (KeyError: 'missing')" in err and "the details are in " in err
    crash = Path(err.split("the details are in ", 1)[1].split("; please report it")[0])
    assert crash.parent.name == "crashes" and "KeyError: 'missing'" in crash.read_text()  # the traceback
    monkeypatch.setenv(boundary.DEBUG_ENV, "1")
    with pytest.raises(KeyError):
        boundary.run_checked(bug)


def test_output_to_a_full_disk_or_a_closed_stdout(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:13 TP0] Load weight begin. avail mem=93.21 GB\n")
    with open("/dev/full", "wb") as full:  # every write: ENOSPC
        line = one_error_line(run_cli("scan", str(log), stdout=full.fileno(), timeout=60))
    assert "cannot write to standard output (No space left on device)" in line
    closed = run_cli("scan", str(log), stdout=None, timeout=60, close_stdout=True)
    assert closed.returncode == 3 and closed.stderr == b""  # no verdict in that log; nothing to say


def test_gpus_watch_table_into_a_pipe_is_refused() -> None:
    """The redrawn table needs a terminal; into a pipe it would run forever for nobody (--json is for pipes)."""
    line = one_error_line(run_cli("gpus", "--watch", "--standin", "h200-x2-nvswitch", timeout=60))
    assert "needs a terminal" in line and "--watch --json" in line


def test_a_regex_that_backtracks_for_ever_in_re_runs_and_a_look_around_is_one_line(tmp_path: Path) -> None:
    """(a+)+$ would backtrack 2**40 times on this line under Python's re; RE2 runs it in linear time (a shape
    check refused it before, and could be out-guessed). A look-ahead RE2 cannot run: one line that says so,
    from the command line and from a profile's [rules]."""
    log = tmp_path / "server.log"
    log.write_text("a" * 40 + "!\n" + "a" * 40 + "\n")
    r = run_cli("wait", "--log", str(log), "--timeout", "30", "--ready", "(a+)+$", "--no-record", timeout=60)
    assert r.returncode == 0 and b"READY" in r.stdout, r.stderr[-500:]
    r = run_cli("scan", str(log), "--crash", r"(\w+\s?)*!$", timeout=60)
    assert r.returncode == 1 and b"CRASHED" in r.stdout, r.stderr[-500:]
    line = one_error_line(run_cli("scan", str(log), "--crash", r"a(?!b)", timeout=60))
    assert "look-aheads are not supported" in line
    profile = tmp_path / "symmtui.toml"
    profile.write_text(f'[server]\nlog = "{log}"\n[rules]\nready = ["(?<=a)!"]\n')
    line = one_error_line(run_cli("wait", "--config", str(profile), "--timeout", "5", timeout=60))
    assert "rules.ready" in line and "look-behinds are not supported" in line
