"""Smoke test in a real terminal: `symmtui demo` in tmux, exactly the documented keys (p, y, r, y; the fix
story's p, y, y), to READY."""

from __future__ import annotations

import atexit
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui.ui.screens.confirm import KEY_GUARD
from tests import sysparts

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.xdist_group("tmux"),  # one worker drives tmux: the two demos do not compete for the CPU
    pytest.mark.needs("tmux"),  # skipped with the reason where it is missing; a failure in CI
]

TMUX = sysparts.TMUX
# This test process's own tmux server: not the user's (a developer runs the suite inside tmux; its panes got
# that server's environment, and a kill there reached ours), and one only these tests start and end.
SOCKET = f"symmtui-tests-{os.getpid()}"


@atexit.register
def _end_server() -> None:
    """The server goes with this process, and its socket file with it."""
    sysparts.end_tmux_server(SOCKET)


def _tmux(*args: str) -> str:
    out = subprocess.run([TMUX, "-L", SOCKET, *args], capture_output=True, text=True, timeout=30)
    tries = 1
    while args[:1] == ("new-session",) and out.returncode != 0 and tries < 5:
        # the last session's kill ends the server (exit-empty); a new-session that reaches it as it exits fails
        # ("server exited unexpectedly"): again once it is gone, on a server of its own
        time.sleep(0.2)
        out = subprocess.run([TMUX, "-L", SOCKET, *args], capture_output=True, text=True, timeout=30)
        tries += 1
    assert args[:1] != ("new-session",) or out.returncode == 0, f"tmux new-session failed: {out.stderr.strip()}"
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

    def answer(self, key: str = "y") -> None:
        """A confirming key, once the question on screen has been up KEY_GUARD (a yes sooner is typed ahead)."""
        time.sleep(KEY_GUARD + 0.1)
        self.keys(key)

    def type(self, text: str) -> None:
        """``text`` as one burst of literal keys, as a fast typist or a paste sends it."""
        _tmux("send-keys", "-t", self.session, "-l", text)


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
    story = getattr(request, "param", "crash")  # parametrize indirectly for another story ("nodes": --nodes 2)
    name = f"symmtui-test-{uuid.uuid4().hex[:8]}"
    marker = f"SYMMTUI_TMUX_TEST={name}"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # the tmux server's environment is whoever started it: a COLUMNS/LINES there (a shell's 80x24) would win
    # over the window's size in the app (shutil.get_terminal_size reads them first), and its XDG dirs are not this
    # test's (a full run left a demo bundle in ~/.local/state): this test's own, from its environment
    xdg = " ".join(f"{var}={os.environ[var]}" for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"))
    env_prefix = f"env -u COLUMNS -u LINES {marker} TMPDIR={tmpdir} {xdg} TERM=tmux-256color"
    what = "--speed 40 --nodes 2" if story == "nodes" else f"--speed 160 --story {story}"
    command = f"{env_prefix} {sys.executable} -m symmtui demo {what}"
    width, height = ("160", "72") if story == "nodes" else ("120", "40")  # 16 GPU rows above the panes
    _tmux("new-session", "-d", "-s", name, "-x", width, "-y", height, command)
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
    # keys typed fast after / are the search's text: neither the patch modal nor the relaunch question opens
    modal = r"Close \(n\)|Cancel \(n\)"  # the patch modal's button, the relaunch question's
    pane.type("/prr")
    pane.wait(r"prr", 15)
    time.sleep(0.8)
    assert not re.search(modal, pane.text()), pane.text()
    pane.keys("Escape")
    pane.gone(r"prr", 15)
    time.sleep(1.0)  # past tmux's escape-time (an Escape with a key right behind it reads as Alt+key)
    pane.type("/ready")  # r opened "Relaunch?" and y answered it, one key from killing the server
    pane.wait(r"ready", 30)  # all five keys handled (a loaded machine shows them late): r and y among them
    screen = pane.text()
    assert not re.search(modal, screen), screen
    pane.keys("Escape")
    time.sleep(1.0)  # past tmux's escape-time: an Escape with a key right behind it reads as Alt+key
    pane.keys("p")
    pane.wait(r"\+\s+12: \{", 30)  # the exact diff
    pane.answer()
    pane.wait(r"r relaunches", 30)  # the apply finished; the modal says what r does
    pane.keys("r")
    pane.wait(r"Relaunch\?", 15)
    pane.answer()
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
    pane.answer()
    pane.wait(r"Relaunch\?", 15)
    pane.answer()
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


@pytest.mark.timeout(240)
@pytest.mark.parametrize("session", ["nodes"], indirect=True)
def test_demo_nodes_in_tmux_stalled_then_r_y_ready_everywhere(session: tuple[Pane, Path, str]) -> None:
    """`symmtui demo --nodes 2`: STALLED naming node1 with its stacks; r, y: READY in the header, the banner
    and both nodes' lines, and the old stacks dump gone (it showed "node1 stalled in capturing CUDA graphs"
    under a READY header, and the dump of the hung launch, at 9bd159e)."""
    pane, tmpdir, marker = session
    pane.wait(r"STALLED: node1 is behind", 90)
    pane.wait(r"nccl_comm_init_rank", 60)  # node1's stacks, taken once at STALLED
    pane.keys("r")
    pane.wait(r"Relaunch\?", 15)
    pane.answer()
    screen = pane.wait(r"✔ node0[^\n]*\n[^\n]*✔ node1", 120)
    time.sleep(3.0)  # past the nodes' 2 s stall: a node that went quiet once serving stays ready
    screen = pane.text()
    assert "✔ READY" in screen.splitlines()[0], screen
    assert "stalled" not in screen and "STALLED" not in screen and "nccl_comm_init_rank" not in screen, screen
    _quit_and_check_nothing_is_left(pane, tmpdir, marker)


def _app_pid(marker: str) -> int | None:
    """The demo's own process (the dashboard), not its simulated servers."""
    for pid in _demo_pids(marker):
        try:
            if b"symmtui\0demo" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


def _nothing_left(tmpdir: Path, marker: str) -> None:
    deadline = time.monotonic() + 30
    while (_demo_pids(marker) or any(tmpdir.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _demo_pids(marker), "the demo left processes behind"
    assert not any(tmpdir.iterdir()), f"the demo left files: {list(tmpdir.iterdir())}"


@pytest.mark.timeout(120)
def test_sigterm_before_the_screen_is_up_stops_the_demo_and_cleans_up(session: tuple[Pane, Path, str]) -> None:
    """SIGTERM the moment the demo's server runs, before the dashboard took over the signals: the server
    stopped and the temp dir removed all the same (it killed the demo at once and left both)."""
    _pane, tmpdir, marker = session
    deadline = time.monotonic() + 60
    while len(_demo_pids(marker)) < 2:  # the app and its first server
        assert time.monotonic() < deadline, "the demo never started its server"
        time.sleep(0.01)
    pid = _app_pid(marker)
    assert pid is not None
    os.kill(pid, 15)
    _nothing_left(tmpdir, marker)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("session", ["nodes"], indirect=True)
def test_sigterm_while_the_demo_quits_lets_it_finish_cleaning_up(session: tuple[Pane, Path, str]) -> None:
    """q, then a SIGTERM 0.3 s later, while the demo stops its two servers: the signal waits for the clean-up
    (it killed the demo half-way and left the temp dir: a second reader's run)."""
    pane, tmpdir, marker = session
    pane.wait(r"STALLED: node1 is behind", 90)
    pid = _app_pid(marker)
    assert pid is not None
    pane.keys("q")
    time.sleep(0.3)
    os.kill(pid, 15)
    _nothing_left(tmpdir, marker)
