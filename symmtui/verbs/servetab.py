"""One browser tab of `symmtui serve`: its own dashboard process, fed from the tab, hung up when the tab goes.

textual-serve's own service tells the app that its tab is gone with an in-band "quit" on the app's
stdin. A quit that arrives while the app is still starting, behind a resize (a headless Chromium
screenshot: the tab lives about 2 s), sends Textual 8's exit into a redraw loop between the two sizes
that never ends (75-99 % of a core; SIGTERM asks for the same exit, so it changes nothing), and its
process group was serve's own. Here the app is started in its own session and is treated as a
terminal program whose terminal went away: once it handles SIGHUP (the dashboard's handler, set when
it is mounted, stops its servers and removes the demo's temp dir), it gets SIGHUP; input from the page
waits until then; if it is still there after ``QUIT_GRACE`` seconds its process group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from symmtui import clitext

QUIT_GRACE = 15.0  # seconds a hung-up dashboard has to stop its servers before its group is SIGKILLed
START_LINES = 10  # lines of output before Textual's "__GANGLION__" (as textual-serve allows)
MAX_PACKET = 32 * 1024 * 1024  # one frame from the app; a bigger length is a broken stream
STDERR_KEPT = 16 * 1024
READY_POLL = 0.05
MAX_CELLS = 1000  # a resize beyond this many columns or rows is not a browser's


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (its SigCgt mask in /proc)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        return False
    return False


def _hang_up_with_parent() -> None:
    """In the child, before exec: SIGHUP when serve itself dies (even by SIGKILL), as a terminal would."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGHUP, 0, 0, 0)  # PR_SET_PDEATHSIG


def parse_message(text: str) -> tuple[str, Any] | None:
    """A page's message (``["stdin", "q"]``, ``["resize", {"width": 80, "height": 24}]``, ...) as
    (kind, data), or None for anything else (not JSON, another shape): ignored, never an error."""
    try:
        envelope = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        return None
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        return None
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind == "stdin" and isinstance(data, str):
        return kind, data
    if kind == "resize" and isinstance(data, dict):
        width, height = data.get("width"), data.get("height")
        if all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_CELLS for v in (width, height)):
            return kind, (width, height)
        return None
    if kind in ("focus", "blur") or (kind == "ping" and isinstance(data, str | int | float)):
        return kind, data
    return None


def packet(kind: bytes, payload: bytes) -> bytes:
    return kind + len(payload).to_bytes(4, "big") + payload


class Tab:
    """The dashboard process of one tab: ``start``, ``feed`` the page's messages, ``hang_up``."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], send_bytes: Callable[[bytes], Awaitable[None]],
                 send_str: Callable[[str], Awaitable[None]], close: Callable[[], Awaitable[Any]]) -> None:
        self.argv = list(argv)
        self.env = env
        self._send_bytes = send_bytes
        self._send_str = send_str
        self._close = close
        self.proc: asyncio.subprocess.Process | None = None
        self.tab_gone = False
        self.stderr = bytearray()
        self._held: list[bytes] = []
        self._size: tuple[int, int] | None = None
        self._ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._hangup: asyncio.Task[None] | None = None
        self._starting: asyncio.Future[None] | None = None  # set by start(); done once the process is known

    async def start(self, width: int, height: int) -> None:
        """Start the dashboard; not once the tab is hung up. A hang-up that comes while the process is being
        spawned (its pipes connected: the process runs, ``proc`` is not set yet) waits for it."""
        if self._hangup is not None or self._starting is not None:
            return
        self._starting = asyncio.get_running_loop().create_future()
        env = {**self.env, "COLUMNS": str(width), "ROWS": str(height)}
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True, preexec_fn=_hang_up_with_parent)
            self._tasks = [asyncio.create_task(self._pump()), asyncio.create_task(self._keep_stderr()),
                           asyncio.create_task(self._watch_ready())]
        finally:
            self._starting.set_result(None)

    # ---- page -> app -------------------------------------------------------------------------

    async def feed(self, kind: str, data: Any) -> None:
        """One parsed page message; held (the latest size only) until the app is mounted."""
        if kind == "ping":
            await self._to_page(self._send_str, json.dumps(["pong", data]))
            return
        if kind == "stdin":
            chunk = packet(b"D", str(data).encode("utf-8", "replace"))
        elif kind == "resize":
            self._size = data
            chunk = packet(b"M", json.dumps({"type": "resize", "width": data[0], "height": data[1]}).encode())
        else:
            chunk = packet(b"M", json.dumps({"type": kind}).encode())
        if not self._ready.is_set():
            if kind != "resize":
                self._held.append(chunk)
            return
        await self._write(chunk)

    async def _write(self, chunk: bytes) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):  # the app has gone: nothing to tell it
            proc.stdin.write(chunk)
            await proc.stdin.drain()

    async def _watch_ready(self) -> None:
        """Input goes in once the process handles SIGHUP (symmtui's handler is set before it starts anything; a
        SIGHUP during its start-up acts when that is done, and it cleans up); the held input, then the page's size."""
        proc = self.proc
        assert proc is not None
        while proc.returncode is None and not catches(proc.pid, signal.SIGHUP):
            await asyncio.sleep(READY_POLL)
        self._ready.set()
        if self._size is not None:
            width, height = self._size
            await self._write(packet(b"M", json.dumps({"type": "resize", "width": width, "height": height}).encode()))
        held, self._held = self._held, []
        for chunk in held:
            await self._write(chunk)

    # ---- app -> page -------------------------------------------------------------------------

    async def _to_page(self, send: Callable[[Any], Awaitable[None]], data: Any) -> None:
        if self.tab_gone:
            return
        try:
            await send(data)
        except (ConnectionError, RuntimeError):
            self.tab_gone = True

    async def _pump(self) -> None:
        """Textual's web driver packets to the page; the app's output is read to its end even when
        the tab has gone, so the app never blocks on a full pipe."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        out = proc.stdout
        try:
            for _ in range(START_LINES):
                line = await out.readline()
                if not line or line == b"__GANGLION__\n":
                    break
            while True:
                head = await out.readexactly(5)
                size = int.from_bytes(head[1:], "big")
                if size > MAX_PACKET:
                    break
                payload = await out.readexactly(size)
                if head[:1] == b"D":
                    await self._to_page(self._send_bytes, payload)
                elif head[:1] == b"M":
                    await self._on_meta(payload)
        except asyncio.IncompleteReadError:
            pass
        while await out.read(65536):  # a broken stream: read on to the end, show nothing of it
            pass
        await proc.wait()
        if not self.tab_gone:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self._close()

    async def _on_meta(self, payload: bytes) -> None:
        try:
            meta = json.loads(payload)
        except (ValueError, RecursionError):
            return
        if not isinstance(meta, dict):
            return
        if meta.get("type") == "open_url" and isinstance(meta.get("url"), str):
            await self._to_page(self._send_str, json.dumps(["open_url", {"url": meta["url"],
                                                                         "new_tab": bool(meta.get("new_tab"))}]))

    async def _keep_stderr(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            self.stderr = (self.stderr + chunk)[-STDERR_KEPT:]

    # ---- the tab went away (or serve stops) ---------------------------------------------------

    def hang_up(self) -> Awaitable[None]:
        """Hang the app up as a terminal would (once); wait for it to end, its group killed after the grace."""
        if self._hangup is None:
            self._hangup = asyncio.ensure_future(self._hang_up())
        return asyncio.shield(self._hangup)

    async def _hang_up(self) -> None:
        self.tab_gone = True
        if self._starting is not None:
            await self._starting  # a start under way: its process is hung up too, not left to run unwatched
        proc = self.proc
        if proc is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUIT_GRACE
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), QUIT_GRACE)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGHUP)
        try:
            await asyncio.wait_for(proc.wait(), max(0.1, deadline - loop.time()))
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()

            clitext.note(f"serve: a tab's dashboard (pid {proc.pid}) had not quit {QUIT_GRACE:.0f} s after its "
                         "tab closed: killed", sys.stderr)
        await asyncio.gather(*self._tasks)

    def failure(self) -> str | None:
        """How the app ended when that was not a quit or a hang-up: its exit code and last stderr line."""
        code = self.proc.returncode if self.proc is not None else None
        if code in (None, 0, 128 + signal.SIGHUP, -signal.SIGHUP, -signal.SIGKILL):
            return None
        lines = bytes(self.stderr).decode("utf-8", "replace").strip().splitlines()
        return f"exited with code {code}" + (f": {lines[-1][:300]}" if lines else "")
