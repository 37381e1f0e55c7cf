"""`symmtui serve`: the demo in a real headless Chromium (Debian's, driven by Playwright), who may use it, and bad input in one line.

One server and one browser session for the module (the suite stays fast): the page shows the demo's
GPU rows and its state, a key typed into the page changes the screen, a screenshot is kept; requests
without the token, with another Host or another site's Origin are refused (also from uid nobody);
junk WebSocket messages print nothing; a tab that closes (early, or right before the server stops)
leaves no dashboard and no temp dir; once the server is stopped nothing it started is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
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
    """State, config and temp dirs under ``tmp``; ``mark``: a value every process the server starts inherits."""
    (tmp / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
           "XDG_CACHE_HOME": str(tmp / "cache"), "TMPDIR": str(tmp / "tmp"), MARK: mark}
    env.pop("SYMMTUI_SERVE_TOKEN", None)
    return env


def demo_dirs(tmp: Path) -> list[str]:
    return sorted(p.name for p in (tmp / "tmp").glob("symmtui-demo-*"))


def dashboards(token: str) -> list[psutil.Process]:
    """The tabs' dashboard processes among ``marked(token)``."""
    out = []
    for p in marked(token):
        with contextlib.suppress(psutil.Error):
            if " -m symmtui demo " in " ".join(p.cmdline()):
                out.append(p)
    return out


def settle(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Wait until ``check()`` is truthy; its last value on failure."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return value


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
    token: str  # the processes' mark
    secret: str  # the URL's token
    port: int
    context: Any

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
    # --speed 0.03: the demo server is still loading (alive) when the last test stops everything
    server = subprocess.Popen(serve_argv("--port", str(port), "--speed", "0.03"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=isolated_env(tmp, token), start_new_session=True)
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert banner.startswith("symmtui serve: the demo (story crash) on http://127.0.0.1:"), banner + server.stderr.read() if server.stderr else ""
        found = re.search(r"(http://127\.0\.0\.1:\d+/\?token=([A-Za-z0-9_-]{43})) ", banner)
        assert found, banner
        url, secret = found.group(1), found.group(2)
        with sync_playwright() as pw:
            # the system's Chromium (Playwright downloads no browser), a fresh profile directory
            context = pw.chromium.launch_persistent_context(tmp / "chromium-profile", executable_path=CHROMIUM,
                                                            args=CHROMIUM_ARGS, viewport={"width": 1600, "height": 1000})
            try:
                context.add_init_script(CATCH_TERMINAL)
                page = context.new_page()
                page.goto(url)
                yield Browser(server, url, page, tmp, token, secret, port, context)
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


def _request(port: int, path: str, headers: dict[str, str]) -> tuple[int, str]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read(4096).decode("utf-8", "replace")
    finally:
        conn.close()


WS_HANDSHAKE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


def test_without_the_token_from_another_host_or_another_sites_page_nothing_is_served(browser: Browser) -> None:
    before = len(dashboards(browser.token))
    port, secret, host = browser.port, browser.secret, f"127.0.0.1:{browser.port}"
    status, text = _request(port, "/", {"Host": host})
    assert status == 403 and "no valid token: open the URL symmtui serve printed" in text
    assert _request(port, "/?token=" + "x" * 43, {"Host": host})[0] == 403
    assert _request(port, f"/?token={secret}", {"Host": host})[0] == 200
    assert _request(port, f"/?token={secret}", {"Host": f"localhost:{port}"})[0] == 200
    # DNS rebinding: a page of rebind.evil.example whose name now points at 127.0.0.1
    status, text = _request(port, f"/?token={secret}", {"Host": f"rebind.evil.example:{port}"})
    assert status == 403 and "(Host)" in text
    assert _request(port, f"/?token={secret}", {"Host": f"127.0.0.1:{port + 1}"})[0] == 403
    assert _request(port, "/static/js/textual.js", {"Host": host})[0] == 403
    # the WebSocket: no token; another site's page (with the token); the token as a cookie from our page
    ws = {**WS_HANDSHAKE, "Host": host}
    assert _request(port, "/ws", {**ws, "Origin": f"http://{host}"})[0] == 403
    status, text = _request(port, f"/ws?token={secret}", {**ws, "Origin": "http://evil.example"})
    assert status == 403 and "(Origin)" in text
    assert _request(port, f"/ws?token={secret}", {**ws, "Origin": f"http://rebind.evil.example:{port}"})[0] == 403
    assert _request(port, "/ws", {**ws, "Origin": "null", "Cookie": f"symmtui-serve-{port}=nope"})[0] == 403
    time.sleep(0.5)
    assert len(dashboards(browser.token)) == before  # no refused request started a dashboard


NOBODY_CLIENT = r"""
import http.client, json, sys
port, pid = int(sys.argv[1]), int(sys.argv[2])
found = {}
for name in ("cmdline", "environ"):
    try:
        found[name] = open(f"/proc/{pid}/{name}", "rb").read().decode("utf-8", "replace")
    except OSError as exc:
        found[name] = f"unreadable: {exc.strerror}"
def get(path, headers):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path, headers={"Host": f"127.0.0.1:{port}", **headers})
    return c.getresponse().status
ws = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
      "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": f"http://127.0.0.1:{port}"}
print(json.dumps({"found": found, "page": get("/", {}), "ws": get("/ws", ws)}))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to run a client as uid nobody")
def test_another_local_user_cannot_open_the_page_or_type_keys(browser: Browser) -> None:
    before = len(dashboards(browser.token))
    run = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3",
                          "-c", NOBODY_CLIENT, str(browser.port), str(browser.server.pid)],
                         capture_output=True, text=True, timeout=60, cwd="/")
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert browser.secret not in json.dumps(seen["found"])  # not on serve's command line; its environ is not theirs
    assert seen["page"] == 403 and seen["ws"] == 403
    time.sleep(0.5)
    assert len(dashboards(browser.token)) == before


def test_junk_websocket_messages_are_ignored_and_keys_still_work(browser: Browser) -> None:
    import aiohttp

    async def talk() -> bytes:
        headers = {"Origin": f"http://127.0.0.1:{browser.port}"}
        async with aiohttp.ClientSession() as client, client.ws_connect(
                f"http://127.0.0.1:{browser.port}/ws?token={browser.secret}&width=100&height=30", headers=headers) as ws:
            for junk in ("not json", "[", '{"a": 1}', "[]", "[1, 2]", '["stdin"]', '["stdin", 5]',
                         '["resize", {"width": 1e9, "height": -1}]', '["resize", "big"]', '["nope", {}]', "\u0000"):
                await ws.send_str(junk)
            await ws.send_bytes(b"\xff\x00binary")
            await ws.send_str('["ping", "hello"]')
            got = b""
            deadline = time.monotonic() + 60
            while b"RTX PRO 6000" not in got and time.monotonic() < deadline:
                message = await ws.receive(timeout=60)
                if message.type == aiohttp.WSMsgType.BINARY:
                    got += message.data
                elif message.type == aiohttp.WSMsgType.TEXT:
                    assert json.loads(message.data) == ["pong", "hello"]
                else:
                    break
            return got

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        got = pool.submit(lambda: asyncio.run(talk())).result(timeout=120)
    assert b"RTX PRO 6000" in got


def test_a_tab_that_closes_leaves_no_dashboard_and_no_temp_dir(browser: Browser) -> None:
    base = 1  # the module's page
    settle("the other tabs' dashboards to have quit",
           lambda: len(dashboards(browser.token)) == base and len(demo_dirs(browser.artifacts)) == base)
    # a tab that lives about 2 s: a headless Chromium screenshot (the case)
    shot = browser.artifacts / "early.png"
    first = {p.pid for p in dashboards(browser.token)}
    seen: set[int] = set()
    chromium = subprocess.Popen([CHROMIUM, *CHROMIUM_ARGS, f"--user-data-dir={browser.artifacts / 'shot-profile'}",
                                 f"--screenshot={shot}", "--window-size=1200,800", browser.url],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while chromium.poll() is None:
        seen |= {p.pid for p in dashboards(browser.token)} - first
        time.sleep(0.05)
    assert shot.exists() and seen, "the screenshot's tab started no dashboard"
    settle("the screenshot tab's dashboard to quit",
           lambda: len(dashboards(browser.token)) == base and len(demo_dirs(browser.artifacts)) == base)
    # a tab closed as soon as it has sent its size: the quit reaches a dashboard that is still starting
    early = browser.context.new_page()
    sent: list[object] = []
    early.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(payload)))
    early.goto(browser.url)
    while not sent:
        early.wait_for_timeout(10)
    early.close()
    settle("the quickly closed tab's dashboard to quit",
           lambda: len(dashboards(browser.token)) == base and len(demo_dirs(browser.artifacts)) == base)
    # a tab closed once its dashboard is up: "it quits when the tab closes"
    page = browser.context.new_page()
    page.goto(browser.url)
    settle("the new tab's dashboard", lambda: len(dashboards(browser.token)) > base)
    page.wait_for_timeout(1500)
    page.close()
    settle("the closed tab's dashboard to quit",
           lambda: len(dashboards(browser.token)) == base and len(demo_dirs(browser.artifacts)) == base)


def test_stopping_the_server_leaves_nothing_running(browser: Browser) -> None:
    browser.wait_screen(lambda t: "RTX PRO 6000" in t, "the dashboard")
    started = marked(browser.token)
    commands = [" ".join(p.cmdline()) for p in started]
    assert any(" -m symmtui demo " in c for c in commands), commands  # the page's own dashboard
    assert any("symmtui.demo.server" in c for c in commands), commands  # and the demo's simulated server
    # a second tab, closed right before the server stops: its demo's temp dir must go too
    before = len(dashboards(browser.token))
    late = browser.context.new_page()
    late.goto(browser.url)
    settle("the second tab's dashboard", lambda: len(dashboards(browser.token)) > before)
    late.close()
    browser.server.terminate()  # the first page is still open: its dashboard must quit and stop the demo server
    assert browser.server.wait(40) == 0
    deadline = time.monotonic() + 15
    while (left := marked(browser.token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], [" ".join(p.cmdline()) for p in left]
    assert demo_dirs(browser.artifacts) == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", browser.port), timeout=1)
    assert browser.server.stderr is not None
    err = browser.server.stderr.read()
    assert err == ""  # junk messages, refusals, closed tabs: nothing on serve's terminal (no traceback)


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
    assert warning.startswith("symmtui: warning: listening on 0.0.0.0: anyone who has the URL below")
    assert proc.returncode == 0


def test_another_host_without_a_token_is_refused_in_one_line(tmp_path: Path) -> None:
    env = {**isolated_env(tmp_path), "SYMMTUI_SERVE_TOKEN": ""}
    run = subprocess.run(serve_argv("--host", "0.0.0.0", "--port", str(free_port())), capture_output=True,
                         text=True, timeout=30, env=env)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [run.stderr.strip()]
    assert run.stderr.startswith("symmtui: error: --host '0.0.0.0' with an empty SYMMTUI_SERVE_TOKEN")
    short = subprocess.run(serve_argv("--port", str(free_port())), capture_output=True, text=True, timeout=30,
                           env={**isolated_env(tmp_path), "SYMMTUI_SERVE_TOKEN": "abc"})
    assert short.returncode == 2 and short.stderr.startswith("symmtui: error: SYMMTUI_SERVE_TOKEN: give at least 16")
