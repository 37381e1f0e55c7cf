"""`symmtui serve`: the demo in a real headless Chromium (Debian's, driven by Playwright), and bad input in one line.

One browser session for the module (the suite stays fast): the page shows the demo's GPU rows and its
state, a key typed into the page changes the screen, a screenshot is kept, and once the server is
stopped nothing it started is left running.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests import sysparts
from tests.launch.helpers import free_port
from tests.launch.procguard import MARK

CHROMIUM = sysparts.CHROMIUM
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STATES = ("WAITING", "STARTING", "CRASHED", "READY", "STALLED")

pytestmark = [
    pytest.mark.xdist_group("serve-browser"),  # one worker holds the module's one browser session
    pytest.mark.needs("chromium"),  # skipped with the reason where it is missing; a failure in CI
]

# textual-serve's page draws the terminal with xterm.js on a canvas; its Terminal object is kept as
# `this.terminal` by the page's script. A setter on Object.prototype catches that assignment, so the
# test reads the screen from xterm's own buffer (the text the browser shows), not from the pixels.
CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, 'terminal', {configurable: true, set(value) {
  window.__symmtuiTerminal = value;
  Object.defineProperty(this, 'terminal', {value, writable: true, configurable: true, enumerable: true});
}});
"""
READ_SCREEN = """() => {
  const term = window.__symmtuiTerminal;
  if (!term) return '';
  const buf = term.buffer.active, rows = [];
  for (let i = 0; i < term.rows; i++) {
    const line = buf.getLine(buf.viewportY + i);
    rows.push(line ? line.translateToString(true) : '');
  }
  return rows.join('\\n');
}"""


def serve_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "symmtui", "serve", *args]


def isolated_env(tmp: Path, mark: str = "") -> dict[str, str]:
    """State and config under ``tmp``; ``mark``: a value every process the server starts inherits."""
    return {**os.environ, "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
            "XDG_CACHE_HOME": str(tmp / "cache"), MARK: mark}


def marked(token: str) -> list[psutil.Process]:
    """Live processes carrying ``token`` in their environment (setsid'd or reparented ones too)."""
    out = []
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(MARK) == token and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


@dataclass
class Browser:
    server: subprocess.Popen[str]
    url: str
    page: Any
    artifacts: Path
    token: str

    def screen(self) -> str:
        return str(self.page.evaluate(READ_SCREEN))

    def wait_screen(self, predicate: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the page shows:\n{text}")
            self.page.wait_for_timeout(100)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """`symmtui serve` of the demo on a free port, and one Chromium page open on it."""
    from playwright.sync_api import sync_playwright

    tmp = tmp_path_factory.mktemp("serve")
    port = free_port()
    token = uuid.uuid4().hex
    # --speed 0.1: the demo server is still loading (alive) when the last test stops everything
    server = subprocess.Popen(serve_argv("--port", str(port), "--speed", "0.1"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=isolated_env(tmp, token), start_new_session=True)
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert banner.startswith("symmtui serve: the demo (story crash) on http://127.0.0.1:"), banner + server.stderr.read() if server.stderr else ""
        url = f"http://127.0.0.1:{port}/"
        with sync_playwright() as pw:
            # the system's Chromium (Playwright downloads no browser), a fresh profile directory
            context = pw.chromium.launch_persistent_context(tmp / "chromium-profile", executable_path=CHROMIUM,
                                                            args=CHROMIUM_ARGS, viewport={"width": 1600, "height": 1000})
            try:
                context.add_init_script(CATCH_TERMINAL)
                page = context.new_page()
                page.goto(url)
                yield Browser(server, url, page, tmp, token)
            finally:
                context.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        for p in marked(token):  # only after a failed test: the stop test proves none is left
            with contextlib.suppress(psutil.Error):
                p.kill()


def test_the_page_shows_the_demos_gpu_rows_and_its_state(browser: Browser) -> None:
    text = browser.wait_screen(lambda t: t.count("RTX PRO 6000") >= 8 and any(s in t for s in STATES),
                               "the demo's 8 GPU rows and its state")
    assert "profile demo (simulated GLM-5, TP8)" in text
    assert "GPUs" in text and "Readiness" in text and "Log" in text


def test_a_key_sent_through_the_page_changes_the_screen(browser: Browser) -> None:
    browser.wait_screen(lambda t: "following" in t, "the log pane following the demo's log")
    browser.page.click("#terminal")
    browser.page.keyboard.press("f")  # the log pane's follow key: following -> paused
    text = browser.wait_screen(lambda t: "paused" in t, "the log pane paused by the key")
    assert "f: follow" in text
    shot = browser.artifacts / "symmtui-serve-demo.png"
    browser.page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("SYMMTUI_TEST_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


def test_stopping_the_server_leaves_nothing_running(browser: Browser) -> None:
    browser.wait_screen(lambda t: "RTX PRO 6000" in t, "the dashboard")
    started = marked(browser.token)
    commands = [" ".join(p.cmdline()) for p in started]
    assert any(" -m symmtui demo " in c for c in commands), commands  # the page's own dashboard
    assert any("symmtui.demo.server" in c for c in commands), commands  # and the demo's simulated server
    browser.server.terminate()  # the page is still open: its dashboard must quit and stop the demo server
    assert browser.server.wait(30) == 0
    deadline = time.monotonic() + 15
    while (left := marked(browser.token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], [" ".join(p.cmdline()) for p in left]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(browser.url.rsplit(":", 1)[1].strip("/"))), timeout=1)


# ---- bad input: one line, before anything listens ----------------------------------------------


def _serve(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(serve_argv(*args), capture_output=True, text=True, timeout=30, env=isolated_env(tmp))


def test_a_port_in_use_or_a_bad_host_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = _serve(tmp_path, "--port", str(port))
    assert busy.returncode != 0 and busy.stdout == ""
    assert busy.stderr.splitlines() == [busy.stderr.strip()]
    assert busy.stderr.startswith(f"symmtui: error: --port {port}: the port is in use on 127.0.0.1")
    bad = _serve(tmp_path, "--host", "no-such-host.invalid")
    assert bad.returncode != 0 and len(bad.stderr.splitlines()) == 1
    assert bad.stderr.startswith("symmtui: error: --host 'no-such-host.invalid': not an address of this machine")
    cfg = _serve(tmp_path, "--config", str(tmp_path / "missing.toml"))
    assert cfg.returncode != 0 and len(cfg.stderr.splitlines()) == 1 and cfg.stderr.startswith("symmtui: error: ")


def test_another_host_than_loopback_is_served_with_a_warning_line(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(serve_argv("--host", "0.0.0.0", "--port", str(port)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=isolated_env(tmp_path))
    try:
        assert proc.stderr is not None and proc.stdout is not None
        warning = proc.stderr.readline()
        assert proc.stdout.readline().startswith(f"symmtui serve: the demo (story crash) on http://0.0.0.0:{port}")
    finally:
        proc.terminate()
        proc.wait(10)
    assert warning.startswith("symmtui: warning: listening on 0.0.0.0: anyone who can reach")
    assert proc.returncode == 0
