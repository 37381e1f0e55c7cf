"""Bad configuration: every malformed profile is one clear error naming file, line and key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.launch.profile import ProfileError, load_profile


def _bad(tmp_path: Path, text: str) -> str:
    path = tmp_path / "symmtui.toml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    msg = str(info.value)
    assert msg.startswith(str(path)), msg
    assert "\n" not in msg
    return msg


def test_malformed_toml_names_line_and_column(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\ntimeout = \n')
    assert ":3:" in msg and "malformed TOML" in msg and "server.timeout" in msg


def test_unclosed_string(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\nlog_dir = "/x\ncommand = "y"\n')
    assert ":2:" in msg and "malformed TOML" in msg


def test_unknown_key_with_suggestion(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\nlog_dri = "/l"\n')
    assert msg.endswith("symmtui.toml:3: server.log_dri: unknown key; did you mean 'log_dir'?")


def test_unknown_table(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\n[rule]\nready = ["a"]\n')
    assert ":3:" in msg and "rule" in msg and "did you mean 'rules'?" in msg


def test_unknown_rules_key(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\n[rules]\nreddy = ["a"]\n')
    assert ":4: rules.reddy: unknown key; did you mean 'ready'?" in msg


def test_bad_regex_names_the_pattern(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\n\n[rules]\nready = ["fine", "fired up ("]\n')
    assert ":5: rules.crash" not in msg and ":5: rules.ready: bad regular expression 'fired up ('" in msg


@pytest.mark.parametrize("key", ["timeout", "stall", "grace"])
def test_negative_timeouts(tmp_path: Path, key: str) -> None:
    msg = _bad(tmp_path, f'[server]\ncommand = "x"\n{key} = -5\n')
    assert f":3: server.{key}: must be a number of seconds from 0 to 2592000, got -5" in msg


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ('timeout = "soon"', "server.timeout: must be a number of seconds"),
        ("shell = 1", "server.shell: must be true or false"),
        ("command = 5", "server.command: must be a string"),
        ("command = []", "server.command: must be a non-empty list"),
        ('url = "localhost:30000"', "server.url: must be an http:// or https:// URL"),
        ('url = "http://127.0.0.1:99999/health"', "server.url: bad port"),
        ('url = "http://127.0.0.1:0/health"', "server.url: bad port"),
        ('url = "http://[::1/health"', "server.url: is not a valid URL"),
        ('cwd = "~no-such-user-here/x"', "server.cwd: cannot expand '~no-such-user-here'"),
        ('log_dir = "~no-such-user-here"', "server.log_dir: cannot expand '~no-such-user-here'"),
        ('command = "python \'unclosed"', "server.command: cannot split into arguments"),
    ],
)
def test_wrong_types(tmp_path: Path, line: str, what: str) -> None:
    text = '[server]\ncommand = "x"\n' if not line.startswith("command") else "[server]\n"
    msg = _bad(tmp_path, text + line + "\n")
    assert what in msg


def test_env_must_be_names_and_strings(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\n[server.env]\n"BAD NAME" = "v"\n')
    assert "server.env.BAD NAME" in msg and "not a valid environment variable name" in msg
    msg = _bad(tmp_path, '[server]\ncommand = "x"\n[server.env]\nX = ["a"]\n')
    assert ":4: server.env.X: must be a string" in msg


def test_neither_command_nor_log(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\nurl = "http://127.0.0.1:1/health"\n')
    assert "needs either command" in msg


def test_command_with_log_is_ambiguous(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\nlog = "/tmp/x.log"\n')
    assert ":3: server.log: with server.command use server.log_dir" in msg


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "symmtui.toml"
    path.write_bytes(b'[server]\ncommand = "\xff"\n')
    with pytest.raises(ProfileError, match="not UTF-8"):
        load_profile(path)


def test_cli_prints_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "symmtui.toml"
    path.write_text('[server]\ncommand = "x"\ntimeout = -1\n')
    assert main(["stop", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("symmtui: error: ") and "server.timeout" in err
    assert main(["launch", "--config", str(path)]) == 2


def test_a_bad_profile_is_reported_before_the_engine_is_imported(tmp_path: Path) -> None:
    """`stop` / `launch` with a missing or bad profile: the one error line, and no engine, session or
    GPU module imported for it (a script's `symmtui stop` pays ~0.05 CPU-s, not ~0.14)."""
    bad = tmp_path / "symmtui.toml"
    bad.write_text('[server]\ncommand = "x"\ntimeout = -1\n')
    for verb, path in (("stop", tmp_path / "missing.toml"), ("stop", bad), ("launch", bad)):
        code = ("import sys\nfrom symmtui.cli import main\n"
                f"rc = main([{verb!r}, '--config', {str(path)!r}])\n"
                "heavy = ('symmtui.bringup.engine', 'symmtui.judge.events', 'symmtui.session.core', 'symmtui.gpu.nvml', 'hyperscan')\n"
                "print('exit', rc, sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        lines = r.stderr.splitlines()
        assert lines[0].startswith("symmtui: error: ") and lines[-1] == "exit 2 []", (verb, r.stderr)


def test_key_with_newline_still_one_line(tmp_path: Path) -> None:
    msg = _bad(tmp_path, '[server]\ncommand = "x"\n"evil\\nkey\\u001b[31m" = 1\n')
    assert "unknown key" in msg and "\\n" in msg and "\x1b" not in msg
