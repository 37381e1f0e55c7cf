"""Profiles: the documented TOML shape, search order, and errors naming file, line and key."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symmtui.launch.profile import DEFAULT_GRACE, ProfileError, find_profile, load_profile, parse_profile

ISSUE_EXAMPLE = """\
[server]
command = "python -m sglang.launch_server --model-path /models/GLM-5-NVFP4 --tp 8 --enable-torch-symm-mem --port 30000"
cwd = "/data/eagle3"
log_dir = "/data/eagle3/logs"       # each launch writes <log_dir>/<timestamp>.log, and latest.log points at it
# log = "/data/eagle3/server.log"   # instead of command + log_dir: attach only, watch this log
url = "http://127.0.0.1:30000/health"
timeout = 900                        # seconds
stall = 300                          # seconds without a new line or progress
shell = false

[server.env]
NCCL_DEBUG = "WARN"

[rules]                              # added to the built-in rules
ready = ["The server is fired up"]
crash = ["my fatal marker"]
"""


def test_issue_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "symmtui.toml"
    path.write_text(ISSUE_EXAMPLE)
    p = load_profile(path)
    assert p.argv == tuple(shlex.split(
        "python -m sglang.launch_server --model-path /models/GLM-5-NVFP4 --tp 8 --enable-torch-symm-mem --port 30000"))
    assert p.cwd == Path("/data/eagle3") and p.log_dir == Path("/data/eagle3/logs")
    assert p.log_path == Path("/data/eagle3/logs/latest.log")
    assert p.url == "http://127.0.0.1:30000/health"
    assert (p.timeout, p.stall, p.grace, p.shell) == (900.0, 300.0, DEFAULT_GRACE, False)
    assert dict(p.env) == {"NCCL_DEBUG": "WARN"}
    assert p.ready == ("The server is fired up",) and p.crash == ("my fatal marker",)
    assert not p.attach_only


def test_argv_list_and_shell_string(tmp_path: Path) -> None:
    a = tmp_path / "a.toml"
    a.write_text('[server]\ncommand = ["python", "-c", "print(1); print(2)"]\nlog_dir = "logs"\n')
    pa = load_profile(a)
    assert pa.argv == ("python", "-c", "print(1); print(2)")
    assert pa.log_dir == tmp_path / "logs"  # relative to the profile's directory
    b = tmp_path / "b.toml"
    b.write_text('[server]\ncommand = "echo hi | tee x"\nshell = true\nlog_dir = "/tmp/l"\n')
    assert load_profile(b).argv == ("/bin/sh", "-c", "echo hi | tee x")


def test_same_command_same_hash(tmp_path: Path) -> None:
    a = tmp_path / "a.toml"
    a.write_text('[server]\ncommand = "python -m x --tp 8"\nlog_dir = "l"\n')
    b = tmp_path / "b.toml"
    b.write_text('[server]\ncommand = ["python", "-m", "x", "--tp", "8"]\nlog_dir = "m"\n')
    c = tmp_path / "c.toml"
    c.write_text('[server]\ncommand = ["python", "-m", "x", "--tp", "4"]\nlog_dir = "m"\n')
    assert load_profile(a).command_hash == load_profile(b).command_hash != load_profile(c).command_hash
    assert load_profile(a).key != load_profile(b).key


def test_attach_only(tmp_path: Path) -> None:
    path = tmp_path / "symmtui.toml"
    path.write_text('[server]\nlog = "/var/log/server.log"\nurl = "http://127.0.0.1:30000/health"\n')
    p = load_profile(path)
    assert p.attach_only and p.log_path == Path("/var/log/server.log")
    assert "no server.command" in p.attach_reason and "attach only" in p.attach_reason


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "symmtui"
    xdg.mkdir(parents=True)
    (xdg / "symmtui.toml").write_text('[server]\nlog = "/x/xdg.log"\n')
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert load_profile(None).log == Path("/x/xdg.log")
    (work / "symmtui.toml").write_text('[server]\nlog = "/x/here.log"\n')
    assert load_profile(None).log == Path("/x/here.log")
    explicit = tmp_path / "other.toml"
    explicit.write_text('[server]\nlog = "/x/explicit.log"\n')
    assert load_profile(explicit).log == Path("/x/explicit.log")


def test_no_profile_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_profile(None) is None
    with pytest.raises(ProfileError, match="no launch profile: create ./symmtui.toml"):
        load_profile(None)
    with pytest.raises(ProfileError, match="no such file"):
        load_profile(tmp_path / "missing.toml")
    with pytest.raises(ProfileError, match="not a regular file"):
        load_profile(tmp_path)
    with pytest.raises(ProfileError, match="no such user's home directory"):
        load_profile("~no-such-user-here/symmtui.toml")


_FRAGMENTS = [
    "[server]", "[rules]", "[server.env]", "[[server]]", 'command = "python -m x"', "command = []",
    'command = ["a", 1]', "timeout = -1", "timeout = nan", "timeout = inf", 'timeout = "x"', "stall = 1e999",
    "shell = true", 'log = "/x.log"', 'log_dir = ""', 'url = "http://h:1/"', 'url = "http://h:0x/"',
    'ready = ["("]', "crash = [1]", "X = 1", '"BAD KEY" = 2', "env = 3", 'cwd = "\\u0000"', "= =", '"""',
    "command = { a = 1 }", "rules = 5", "server = 1", "# comment", "", '"a\\nb" = 1', 'log = "\\r\\n"',
    'url = "http://[::1/x"', 'url = "http://h:0/"', 'cwd = "~no-such-user-here/x"', 'log = "~nobody-xyz"',
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=30)), max_size=12))
def test_any_text_is_a_profile_or_one_line_profile_error(tmp_path: Path, lines: list[str]) -> None:
    """Whatever the file holds: a Profile, or a one-line ProfileError naming the file; never a traceback."""
    path = tmp_path / "fuzz.toml"
    try:
        p = parse_profile("\n".join(lines), path)
    except ProfileError as exc:
        msg = str(exc)
        assert msg.startswith(str(path)) and "\n" not in msg.strip()
        return
    assert p.argv is not None or p.log is not None
    assert p.timeout >= 0 and p.stall >= 0 and p.timeout != float("inf")
