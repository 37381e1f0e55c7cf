"""`symmtui serve`'s web server: textual-serve's page and scripts, behind the Guard, one Tab per WebSocket.

Everything the page loads comes from here (the page itself is ``serve_page.html``: textual-serve's without its
Google Fonts link, the fonts served from textual-serve's static folder); every answer carries
``Referrer-Policy: no-referrer`` and the page a Content-Security-Policy of its own origin only: the page's URL
carries the token, and no request may take it elsewhere. On shutdown every tab's dashboard is hung up and its
WebSocket closed, so the server does not wait out its shutdown timeout on an open tab."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
import textual_serve
from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.web_runner import GracefulExit

from symmtui import clitext
from symmtui.textsafe import visible
from symmtui.verbs.serveauth import Guard
from symmtui.verbs.servetab import QUIT_GRACE, Tab, parse_message

MAX_MESSAGE = 64 * 1024  # one WebSocket message from a page: keys, a resize, a ping
PAGE = Path(__file__).with_name("serve_page.html")
HEADERS = {"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}
PAGE_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
               "font-src 'self'; img-src 'self' data:; connect-src 'self' {ws}; frame-ancestors 'none'; "
               "base-uri 'none'; form-action 'none'")
"""The page's Content-Security-Policy: its own origin, and the WebSocket of its own host (``{ws}``)."""


def _to_int(value: str | None, default: int, top: int = 1000) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return number if 1 <= number <= top else default


def make_app(guard: Guard, argv: list[str], env: dict[str, str], banner: str) -> web.Application:

    base = Path(textual_serve.__file__).resolve().parent
    app = web.Application(middlewares=[guard.middleware()])
    aiohttp_jinja2.setup(app, loader=jinja2.DictLoader({"page.html": PAGE.read_text(encoding="utf-8")}),
                         autoescape=True)
    tabs: dict[Tab, web.WebSocketResponse] = {}  # the open tabs' dashboards and sockets

    async def index(request: web.Request) -> web.StreamResponse:
        root = f"{request.scheme}://{request.host}"  # the Host the guard accepted
        context = {"font_size": _to_int(request.query.get("fontsize"), 16, 64),
                   "app_websocket_url": ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws",
                   "config": {"static": {"url": f"{root}/static/"}}, "application": {"name": "symmtui"}}
        page = aiohttp_jinja2.render_template("page.html", request, context)
        page.headers["Content-Security-Policy"] = PAGE_POLICY.format(ws=context["app_websocket_url"])
        page.headers["Cache-Control"] = "no-store"  # its URL holds the token
        return page

    async def websocket(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        await ws.prepare(request)
        tab = Tab(argv, env, ws.send_bytes, ws.send_str, ws.close)
        tabs[tab] = ws
        try:
            await tab.start(_to_int(request.query.get("width"), 80), _to_int(request.query.get("height"), 24))
            async for message in ws:
                if message.type == WSMsgType.TEXT and (parsed := parse_message(message.data)) is not None:
                    await tab.feed(*parsed)
        finally:
            await tab.hang_up()
            tabs.pop(tab, None)
            if (why := tab.failure()) is not None:
                clitext.note(f"serve: a tab's dashboard {why}", sys.stderr)
        return ws

    async def on_startup(app: web.Application) -> None:
        print(visible(banner), flush=True)

    async def on_shutdown(app: web.Application) -> None:
        # every tab's dashboard is hung up at once (it stops its servers, the demo removes its temp dir), then its
        # socket is closed: its handler ends, and the server does not wait out its shutdown timeout for it
        open_tabs = list(tabs.items())
        await asyncio.gather(*(tab.hang_up() for tab, _ in open_tabs))
        await asyncio.gather(*(ws.close(code=WSCloseCode.GOING_AWAY, message=b"symmtui serve stopped")
                               for _, ws in open_tabs), return_exceptions=True)

    async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(HEADERS)  # every answer: the page, its scripts and fonts, a refusal, the socket

    app.add_routes([web.get("/", index), web.get("/ws", websocket),
                    web.static("/static", base / "static")])
    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    app.on_response_prepare.append(on_prepare)
    return app


def serve(sock: socket.socket, guard: Guard, argv: list[str], env: dict[str, str], banner: str) -> None:
    """Serve on ``sock`` until SIGINT or SIGTERM; aiohttp's own logging stays quiet."""
    logging.getLogger("aiohttp").setLevel(logging.CRITICAL)

    def stop() -> None:
        raise GracefulExit()

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.add_signal_handler(signal.SIGINT, stop)
    loop.add_signal_handler(signal.SIGTERM, stop)
    app: Any = make_app(guard, argv, env, banner)
    web.run_app(app, sock=sock, handle_signals=False, loop=loop, shutdown_timeout=QUIT_GRACE + 5,
                print=lambda *_a: None, access_log=None)
