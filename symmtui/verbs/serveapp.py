"""`symmtui serve`'s web server: textual-serve's page and scripts, behind the Guard, one Tab per WebSocket."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web
from aiohttp.web_runner import GracefulExit

from symmtui.verbs.serveauth import Guard
from symmtui.verbs.servetab import QUIT_GRACE, Tab, parse_message

MAX_MESSAGE = 64 * 1024  # one WebSocket message from a page: keys, a resize, a ping


def _to_int(value: str | None, default: int, top: int = 1000) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return number if 1 <= number <= top else default


def make_app(guard: Guard, argv: list[str], env: dict[str, str], banner: str) -> web.Application:
    import aiohttp_jinja2
    import jinja2
    import textual_serve

    from symmtui import clitext
    from symmtui.textsafe import visible

    base = Path(textual_serve.__file__).resolve().parent
    app = web.Application(middlewares=[guard.middleware()])
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(base / "templates"), autoescape=True)
    tabs: set[Tab] = set()  # the open tabs' dashboards

    async def index(request: web.Request) -> web.StreamResponse:
        root = f"{request.scheme}://{request.host}"  # the Host the guard accepted
        context = {"font_size": _to_int(request.query.get("fontsize"), 16, 64),
                   "app_websocket_url": ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws",
                   "config": {"static": {"url": f"{root}/static/"}}, "application": {"name": "symmtui"}}
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def websocket(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        await ws.prepare(request)
        tab = Tab(argv, env, ws.send_bytes, ws.send_str, ws.close)
        tabs.add(tab)
        try:
            await tab.start(_to_int(request.query.get("width"), 80), _to_int(request.query.get("height"), 24))
            async for message in ws:
                if message.type == WSMsgType.TEXT and (parsed := parse_message(message.data)) is not None:
                    await tab.feed(*parsed)
        finally:
            await tab.hang_up()
            tabs.discard(tab)
            if (why := tab.failure()) is not None:
                clitext.note(f"serve: a tab's dashboard {why}", sys.stderr)
        return ws

    async def on_startup(app: web.Application) -> None:
        print(visible(banner), flush=True)

    async def on_shutdown(app: web.Application) -> None:
        # every tab's dashboard is hung up at once (it stops its servers, the demo removes its temp dir)
        await asyncio.gather(*(tab.hang_up() for tab in list(tabs)))

    app.add_routes([web.get("/", index), web.get("/ws", websocket),
                    web.static("/static", base / "static")])
    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    return app


def serve(sock: socket.socket, guard: Guard, argv: list[str], env: dict[str, str], banner: str) -> None:
    """Serve on ``sock`` until SIGINT or SIGTERM; aiohttp's own logging stays quiet."""
    import logging

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
