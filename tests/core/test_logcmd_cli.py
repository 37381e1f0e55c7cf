"""`--log-cmd` on the command line and `log_cmd` in a profile: `symmtui wait` over a real command."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.launch.profile import ProfileError, parse_profile

from .engine_kit import FIXTURES, KEYERROR_LOG, READY_LOG

WRITER = FIXTURES / "log_cmd_writer.py"
COMPOSE_LOG = FIXTURES.parent / "corpus" / "cases" / "sglang-12496-compose-custom-allreduce-warning.log"


def _cmd(*args: object) -> str:
    return shlex.join([sys.executable, str(WRITER), *map(str, args)])


def test_wait_reads_the_log_from_a_command_and_stops_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pidfile = tmp_path / "pid"
    code = main(["wait", "--log-cmd", _cmd(READY_LOG, "--sleep", 60, "--pidfile", pidfile), "--timeout", "30"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "log started: running log command `" in out and "] loading weights" in out
    assert any(ln.startswith("READY after ") for ln in out.splitlines())
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"


def test_wait_through_a_shell_pipeline_judges_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["wait", "--log-cmd", f"cat {shlex.quote(str(KEYERROR_LOG))} | cat; sleep 60", "--log-cmd-shell",
                 "--timeout", "30"])
    out = capsys.readouterr().out
    assert code == 1
    assert "CRASHED after" in out and "KeyError: 12" in out


@pytest.mark.parametrize(("args", "said"), [
    (["--log-cmd", "no-such-log-program-xyz logs -f sglang"], "not found on PATH"),
    (["--log-cmd", "docker logs 'sglang"], "check the quoting"),
    (["--log-cmd", "   "], "the log command is empty"),
    (["--log-cmd", "true", "--log", "x.log"], "not both"),
    (["--log-cmd", "true", "--new-only"], "docker logs -f --since 0s"),
    (["--log-cmd-shell", "--log", "x.log"], "--log-cmd-shell goes with --log-cmd"),
])
def test_bad_log_commands_are_one_line(args: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wait", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symmtui: error: ") and said in err and err.count("\n") == 1


def test_a_profiles_log_cmd_is_what_wait_follows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "symmtui.toml"
    argv = [sys.executable, str(WRITER), str(READY_LOG), "--sleep", "60"]
    profile.write_text("[server]\nlog_cmd = [" + ", ".join(f'"{a}"' for a in argv) + "]\ntimeout = 30\n")
    assert main(["wait", "--config", str(profile)]) == 0
    assert "READY after" in capsys.readouterr().out


def test_profile_log_cmd_schema(tmp_path: Path) -> None:
    where = tmp_path / "symmtui.toml"
    p = parse_profile('[server]\nlog_cmd = ["docker", "logs", "-f", "sglang"]\n', where)
    assert p.log_cmd is not None and p.log_cmd.argv == ("docker", "logs", "-f", "sglang") and not p.log_cmd.shell
    assert p.attach_only and p.log is None and "`docker logs -f sglang`" in p.attach_reason
    p = parse_profile("[server]\nlog_cmd = \"ssh node1 tail -F '/var/log/sglang log'\"\n", where)
    assert p.log_cmd is not None and p.log_cmd.argv == ("ssh", "node1", "tail", "-F", "/var/log/sglang log")
    p = parse_profile('[server]\nlog_cmd = "kubectl logs -f pod/x | grep -v GET"\nlog_cmd_shell = true\n', where)
    assert p.log_cmd is not None and p.log_cmd.argv == ("/bin/sh", "-c", "kubectl logs -f pod/x | grep -v GET")
    p = parse_profile('[server]\ncommand = ["docker", "start", "sglang"]\nlog_cmd = "docker logs -f sglang"\n', where)
    assert p.argv == ("docker", "start", "sglang") and p.log_cmd is not None


@pytest.mark.parametrize(("text", "said"), [
    ('log = "/x.log"\nlog_cmd = ["tail", "-F", "/x.log"]', "server.log_cmd: give server.log (a file) or"),
    ('log = "/x.log"\nlog_cmd_shell = true', "server.log_cmd_shell: goes with server.log_cmd"),
    ("log_cmd = []", "server.log_cmd: must be a non-empty list"),
    ('log_cmd = "tail -F \'x"', "server.log_cmd: cannot split into arguments"),
    ('log_cmd = "x"\nlog_cmd_shell = "yes"', "server.log_cmd_shell: must be true or false"),
    ('log_cmd_x = "x"', "did you mean 'log_cmd'"),
])
def test_profile_log_cmd_errors_name_the_line_and_key(text: str, said: str, tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"symmtui\.toml:\d+: ") as info:
        parse_profile("[server]\n" + text + "\n", tmp_path / "symmtui.toml")
    assert said in str(info.value)


def test_compose_prefixes_are_kept_for_display_and_ranks_still_read(capsys: pytest.CaptureFixture[str]) -> None:
    """A real `docker compose` log (sgl-project/sglang#12496, 'sglang-1  | ' on every line) read through a
    command: the warning is judged from the line behind the prefix, the ranks are named."""
    import queue

    from symmtui.bringup.engine import Bringup, EngineUpdate
    from symmtui.judge.readiness import ReadinessConfig
    from symmtui.logs.logcmd import LogCommand

    updates: queue.Queue[EngineUpdate] = queue.Queue()
    cmd = LogCommand.from_argv([sys.executable, str(WRITER), str(COMPOSE_LOG), "--sleep", "60"])
    engine = Bringup(cmd, config=ReadinessConfig(timeout=30, stall=0), on_update=updates.put)
    engine.start()
    try:
        lines, events = [], []
        want = COMPOSE_LOG.read_text().count("\n")
        while len(lines) < want:
            up = updates.get(timeout=10)
            lines += [ln for ln in up.lines if not ln.progress]
            events += up.events
        ranks = engine.ranks()
    finally:
        engine.stop()
    assert all(ln.plain.startswith("sglang-1  | ") for ln in lines)  # shown as the runtime printed it
    warnings = [e for e in events if e.rule_id == "custom-allreduce-no-p2p"]
    assert warnings and warnings[0].text.startswith("sglang-1  | [2025-11-01 16:50:36 TP")
    assert ranks is not None and ranks.total == 2
