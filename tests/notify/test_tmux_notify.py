"""`symmtui wait --notify` in a real tmux with a real attached client: the tmux message is in the server's
message log (`tmux show-messages`) and the window that rang has its bell flag."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.notify.kit import READY_LOG

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.needs("tmux", "script"),  # skipped with the reason where missing; a failure in CI
]


class Tmux:
    def __init__(self, sock: Path) -> None:
        self.sock = sock

    def __call__(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.sock), *args], capture_output=True, text=True, timeout=10)
        return done.stdout


def _until(cond: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not callable(cond) or not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path / "tmux.sock")
    t("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "100", "-y", "20", "sleep 120")
    # a real client in a pseudo-terminal: tmux shows messages to clients, and logs them
    client = subprocess.Popen(["script", "-qfc", f"tmux -S {shlex.quote(str(t.sock))} attach -t main", "/dev/null"],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "TERM": "xterm"})
    try:
        _until(lambda: "main" in t("list-clients"), "the tmux client to attach", 10)
        yield t
    finally:
        t("kill-server")  # the attached client exits with its server, and `script` with it
        try:
            client.wait(5)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait(5)


def test_wait_notify_in_tmux_shows_a_message_and_rings_the_window(tmux: Tmux, tmp_path: Path) -> None:
    status = tmp_path / "exit"
    wait = shlex.join([sys.executable, "-m", "symmtui", "wait", "--notify", "--no-record", "--log", str(READY_LOG)])
    # in a second window, not the one on screen: a bell there sets the window's bell flag
    tmux("new-window", "-d", "-t", "main:1", "-n", "waiter",
         f"env -u DISPLAY -u WAYLAND_DISPLAY {wait}; echo $? > {shlex.quote(str(status))}; sleep 60")
    _until(lambda: status.exists() and status.read_text().endswith("\n"), "wait to exit")  # the shell creates it, then writes
    _until(lambda: status.read_text().strip() != "", "the exit code")
    assert status.read_text().strip() == "0"
    # the shell wrote the exit code; the tmux server reads the pane's output (the text, the bell) on its own
    # time: on a loaded machine it had not yet when the file appeared
    _until(lambda: "READY after" in tmux("capture-pane", "-p", "-t", "main:1"), "READY in the waiter's pane")
    messages = tmux("show-messages")
    assert re.search(r"message: symmtui: READY after [0-9.]+ s \(attach sglang-tp8-ready\.log\)", messages), messages
    _until(lambda: tmux("display-message", "-p", "-t", "main:1", "#{window_bell_flag}").strip() == "1",
           "the bell flag of the waiter's window")
    assert tmux("display-message", "-p", "-t", "main:0", "#{window_bell_flag}").strip() == "0"
