"""The rule for a missing system part, checked for real: sshd, Chromium and tmux hidden from a child pytest
(each pointed at a path that does not exist), its tests are skipped with the reason on a fresh machine
and fail under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sysparts

ROOT = Path(__file__).resolve().parents[1]
TESTS = {  # one test of each part's, reached through the part's own mechanism
    "sshd": "tests/launch/test_nodes.py::test_two_nodes_launch_ready_and_stop_over_ssh",  # a fixture: require()
    "chromium": "tests/ui/test_serve.py",  # a module mark: needs("chromium")
    "tmux": "tests/ui/test_tmux.py",
}
HIDDEN = {"SYMMTUI_TEST_SSHD": "/nonexistent/sshd", "SYMMTUI_TEST_CHROMIUM": "/nonexistent/chromium",
          "SYMMTUI_TEST_TMUX": "/nonexistent/tmux"}


def _child_pytest(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(parents=True)
    env = {**os.environ, **HIDDEN}
    env.pop("CI", None)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsE", "-o", "addopts=", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "child"), *TESTS.values()],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    tmp = tmp_path_factory.mktemp("sysparts")
    return {"fresh": _child_pytest(tmp / "fresh", None), "ci": _child_pytest(tmp / "ci", "true")}


def test_a_missing_part_skips_with_the_reason_on_a_fresh_machine(runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    r = runs["fresh"]
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert " passed" not in out and "failed" not in out and "error" not in out.lower(), out[-3000:]
    for why in ("no /nonexistent/sshd: apt-get install openssh-server", "no /nonexistent/chromium: apt-get install chromium",
                "tmux is not installed: apt-get install tmux"):
        assert "SKIPPED" in out and why in out, (why, out[-3000:])
    assert "Path(SSHD).exists()" not in out  # the old assertion error is gone


def test_under_ci_a_missing_part_fails_instead(runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    r = runs["ci"]
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-3000:]
    assert "SKIPPED" not in out and "skipped" not in out, out[-3000:]
    for part in ("/nonexistent/sshd", "/nonexistent/chromium", "tmux is not installed"):
        assert part in out and "CI=true and a system part is missing" in out, (part, out[-3000:])


def test_the_parts_here_and_the_ci_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, ci in (("true", True), ("1", True), ("TRUE", True), ("", False), ("false", False), ("0", False)):
        monkeypatch.setenv("CI", value)
        assert sysparts.in_ci() is ci
    with pytest.raises(ValueError, match="unknown system part"):
        sysparts.missing("gpu")
