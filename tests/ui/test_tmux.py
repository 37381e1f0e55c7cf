"""Smoke test in a real terminal: `symmtui demo` in tmux, exactly the documented keys (p, y, r, y; the fix
story's p, y, y), to READY."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import sysparts

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.xdist_group("tmux"),  # one worker drives tmux: the two demos do not compete for the CPU
    pytest.mark.needs("tmux"),  # skipped with the reason where it is missing; a failure in CI
]

TMUX = sysparts.TMUX


def _tmux(*args: str) -> str:
    out = subprocess.run([TMUX, *args], capture_output=True, text=True, timeout=30)
    return out.stdout


class Pane:
    def __init__(self, session: str) -> None:
        self.session = session

    def text(self) -> str:
        return _tmux("capture-pane", "-p", "-t", self.session)

    def wait(self, pattern: str, timeout: float = 60.0) -> str:
        """Poll the screen until `pattern` (a regex) shows; fail with the screen."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.text()
            if rx.search(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} not on screen after {timeout:.0f} s:\n{screen}")

    def gone(self, pattern: str, timeout: float = 30.0) -> None:
        """Poll the screen until `pattern` (a regex) no longer shows; fail with the screen."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while rx.search(screen := self.text()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} still on screen after {timeout:.0f} s:\n{screen}")
            time.sleep(0.1)

    def keys(self, *keys: str) -> None:
        for key in keys:
            _tmux("send-keys", "-t", self.session, key)


def _demo_pids(marker: str) -> list[int]:
    """Processes whose environment carries this test's marker (the demo app and its servers)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.fixture
def session(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Pane, Path, str]]:
    story = getattr(request, "param", "crash")  # parametrize indirectly for another story
    name = f"symmtui-test-{uuid.uuid4().hex[:8]}"
    marker = f"SYMMTUI_TMUX_TEST={name}"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env_prefix = f"env {marker} TMPDIR={tmpdir} TERM=tmux-256color"
    command = f"{env_prefix} {sys.executable} -m symmtui demo --speed 160 --story {story}"
    _tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", command)
    try:
        yield Pane(name), tmpdir, marker
    finally:
        _tmux("kill-session", "-t", name)
        deadline = time.monotonic() + 15
        while _demo_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in _demo_pids(marker):  # anything left behind is killed, and the test fails below
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def _quit_and_check_nothing_is_left(pane: Pane, tmpdir: Path, marker: str) -> None:
    """q, then no demo process and no file of the demo's temp dir may be left."""
    pane.keys("q")
    deadline = time.monotonic() + 30
    while _demo_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _demo_pids(marker), "the demo left processes behind"
    assert not any(tmpdir.iterdir()), f"the demo left files: {list(tmpdir.iterdir())}"



@pytest.mark.timeout(240)
def test_demo_in_tmux_crash_patch_relaunch_ready(session: tuple[Pane, Path, str]) -> None:
    pane, tmpdir, marker = session
    pane.wait(r"CRASHED", 60)
    pane.wait(r"press p to apply the SM120 patch", 30)
    pane.keys("p")
    pane.wait(r"\+\s+12: \{", 30)  # the exact diff
    pane.keys("y")
    pane.wait(r"r relaunches", 30)  # the apply finished; the modal says what r does
    pane.keys("r")
    pane.wait(r"Relaunch\?", 15)
    pane.keys("y")
    pane.wait(r"STARTING|READY", 60)
    screen = pane.wait(r"✔ READY", 120)
    assert "KeyError" not in screen.splitlines()[0]
    pane.gone(r"✔ preflight ")  # the relaunch steps (their first line) closed themselves after RELAUNCH_LINGER
    _quit_and_check_nothing_is_left(pane, tmpdir, marker)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("session", ["fix"], indirect=True)
def test_demo_fix_story_in_tmux_profile_env_relaunch_ready(session: tuple[Pane, Path, str]) -> None:
    """docs/dashboard.md's fix story keys: p shows the profile diff, y applies it, y relaunches, READY."""
    pane, tmpdir, marker = session
    pane.wait(r"CRASHED", 60)
    pane.wait(r"SGLANG_ENABLE_JIT_DEEPGEMM=0", 30)  # the diagnosis' next step
    pane.keys("p")
    pane.wait(r'\+SGLANG_ENABLE_JIT_DEEPGEMM = "0"', 30)  # the profile's diff
    pane.keys("y")
    pane.wait(r"Relaunch\?", 15)
    pane.keys("y")
    screen = pane.wait(r"✔ READY", 120)
    assert "KeyError" not in screen.splitlines()[0]
    pane.gone(r"✔ preflight ")  # the relaunch steps (their first line) closed themselves after RELAUNCH_LINGER
    _quit_and_check_nothing_is_left(pane, tmpdir, marker)


@pytest.mark.timeout(120)
def test_closing_the_pane_stops_the_demo_and_cleans_up(session: tuple[Pane, Path, str]) -> None:
    """The tmux pane goes away (SIGHUP): the demo still stops its server and removes its temp dir."""
    pane, tmpdir, marker = session
    pane.wait(r"CRASHED", 60)
    assert any(tmpdir.iterdir())  # the demo's temp dir exists while it runs
    _tmux("kill-session", "-t", pane.session)
    deadline = time.monotonic() + 30
    while (_demo_pids(marker) or any(tmpdir.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _demo_pids(marker), "the demo left processes behind"
    assert not any(tmpdir.iterdir()), f"the demo left files: {list(tmpdir.iterdir())}"
