"""Bad configuration for the engine's verbs: bad regexes, negative limits, malformed or unknown profile keys."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.core.engine_kit import READY_LOG, env, symmtui_cmd


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(symmtui_cmd(*args), capture_output=True, text=True, timeout=60, env=env())


@pytest.mark.parametrize("verb", ["wait", "scan"])
def test_bad_regex_names_the_pattern(verb: str, tmp_path: Path) -> None:
    target = ["--log", str(READY_LOG)] if verb == "wait" else [str(READY_LOG)]
    r = _run(verb, *target, "--ready", "[unclosed")
    assert r.returncode == 2
    assert "bad ready pattern '[unclosed'" in r.stderr and "missing ]" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("flag", ["--timeout", "--stall"])
@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
def test_bad_limits(flag: str, value: str) -> None:
    r = _run("wait", "--log", str(READY_LOG), flag, value)
    assert r.returncode == 2 and flag in r.stderr


def test_zero_timeout_means_no_limit() -> None:
    r = _run("wait", "--log", str(READY_LOG), "--timeout", "0", "--stall", "0", "--no-record")
    assert r.returncode == 0 and "READY after" in r.stdout


def test_malformed_profile_is_a_one_line_error(tmp_path: Path) -> None:
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text('[server]\nlog = "x.log"\ntimeout = = 3\n')
    r = _run("wait", "--config", str(cfg))
    assert r.returncode == 2
    assert str(cfg) in r.stderr and "malformed TOML" in r.stderr and "Traceback" not in r.stderr


def test_unknown_profile_key_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text('[server]\nlog = "x.log"\ntimeuot = 3\n')
    r = _run("wait", "--config", str(cfg))
    assert r.returncode == 2 and "timeuot" in r.stderr


def test_bad_profile_regex_and_negative_timeout(tmp_path: Path) -> None:
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text(f'[server]\nlog = "{READY_LOG}"\n[rules]\ncrash = ["(oops"]\n')
    r = _run("wait", "--config", str(cfg))
    assert r.returncode == 2 and "(oops" in r.stderr
    cfg.write_text(f'[server]\nlog = "{READY_LOG}"\ntimeout = -4\n')
    r = _run("wait", "--config", str(cfg))
    assert r.returncode == 2 and "timeout" in r.stderr


def test_profile_gives_log_rules_and_limits(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("booting\nCUSTOM-READY\n")
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text(f'[server]\nlog = "{log}"\ntimeout = 30\nstall = 10\n[rules]\nready = ["CUSTOM-READY"]\n')
    r = _run("wait", "--config", str(cfg))
    assert r.returncode == 0, r.stderr
    # the command line wins over the profile
    r = _run("wait", "--config", str(cfg), "--log", str(tmp_path / "other.log"), "--timeout", "0.5")
    assert r.returncode == 124


def test_scan_of_a_missing_file_or_directory(tmp_path: Path) -> None:
    r = _run("scan", str(tmp_path / "nope.log"))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = _run("scan", str(tmp_path))
    assert r.returncode == 2 and "directory" in r.stderr
