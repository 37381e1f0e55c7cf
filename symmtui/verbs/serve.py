"""The `serve` verb: the dashboard (or the demo) in a browser, through textual-serve, on 127.0.0.1 by default."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symmtui import boundary
from symmtui.verbs import demo
from symmtui.verbs.metricsopts import port

if TYPE_CHECKING:  # socket and ipaddress are imported where used: every verb's start imports this module
    import socket

HELP = ("serve the dashboard (--config FILE) or the demo in a web browser (textual-serve): each browser tab "
        "runs its own dashboard; 127.0.0.1 only unless --host says otherwise")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui serve`: where to listen, then what to serve (a profile's dashboard, or the demo's options)."""
    parser.add_argument("--port", metavar="N", type=port, default=DEFAULT_PORT,
                        help=f"TCP port to listen on (default {DEFAULT_PORT})")
    parser.add_argument("--host", metavar="H", default=DEFAULT_HOST,
                        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; another address "
                        "lets anyone who reaches it drive the dashboard, and a warning says so)")
    parser.add_argument("--config", metavar="FILE", type=boundary.path,
                        help="serve the dashboard of this launch profile (without it: the demo)")
    demo.add_arguments(parser)  # the demo's options (--theme also applies to a profile's dashboard)


def command_line(args: argparse.Namespace) -> str:
    """The shell command textual-serve runs for each browser connection (this Python, this symmtui)."""
    python = shlex.quote(sys.executable)
    theme = ["--theme", args.theme] if args.theme else []
    if args.config is not None:
        parts = ["--config", str(Path(args.config).resolve()), *theme]
    else:
        parts = ["demo", "--speed", repr(float(args.speed)), "--story", args.story, "--nodes", str(args.nodes), *theme]
        if args.no_record:
            parts.append("--no-record")
    # exec: the shell textual-serve starts becomes the dashboard, so a SIGTERM reaches the dashboard itself
    return f"exec {python} -m symmtui " + " ".join(shlex.quote(p) for p in parts)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is this machine's loopback ("localhost", 127.0.0.1, ::1)."""
    import ipaddress
    import socket

    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def listen(host: str, port_number: int) -> socket.socket:
    """A listening socket on ``host``:``port_number``; a bad host or a taken port is one UserError line."""
    import errno
    import socket

    from symmtui.errors import UserError

    try:
        infos = socket.getaddrinfo(host, port_number, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) and exc.strerror else str(exc)
        raise UserError(f"--host {boundary.shown(host)}: not an address of this machine ({reason}): "
                        f"give an IP address such as {DEFAULT_HOST} or 0.0.0.0") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            from symmtui.proc.ports import port_owner

            owner = port_owner(port_number)
            held = f" (held by {owner})" if owner else ""
            raise UserError(f"--port {port_number}: the port is in use on {host}{held}: pick another with --port") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise UserError(f"--port {port_number}: not allowed to listen there (ports below 1024 need root): "
                            "pick a port above 1024") from None
        raise UserError(f"--host {boundary.shown(host)} --port {port_number}: cannot listen "
                        f"({exc.strerror or exc}): give an address of this machine") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, number = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{number}"


def run(args: argparse.Namespace) -> int:
    """Listen, say where, serve until Ctrl+C or SIGTERM (each tab's dashboard quits with it)."""
    from symmtui import clitext

    if args.config is not None:
        from symmtui.launch.profile import load_profile

        load_profile(args.config)  # a bad profile is one line now, not a broken page later
    if args.theme is not None:
        from symmtui.ui.entry import check_theme

        check_theme(args.theme)
    sock = listen(args.host, args.port)
    url = url_of(sock)
    if not is_loopback(args.host):
        clitext.note(f"warning: listening on {args.host}: anyone who can reach {url} can drive this dashboard "
                     "(relaunch, patch, stop); there is no login", sys.stderr)
    story = f"{args.nodes} nodes" if args.nodes > 1 else f"story {args.story}"
    what = f"the dashboard of {args.config}" if args.config is not None else f"the demo ({story})"
    server = _server(command_line(args), sock, url, f"symmtui serve: {what} on {url} (Ctrl+C stops)")
    server.serve()
    return 0


def _server(command: str, sock: socket.socket, url: str, banner: str) -> Any:
    """textual-serve's Server on our socket, quiet but for one line when it is up."""
    import asyncio
    import contextlib
    import logging
    import signal

    import psutil  # type: ignore[import-untyped,unused-ignore]
    from aiohttp import web
    from textual_serve.server import Server

    from symmtui.textsafe import visible

    class SymmServer(Server):
        def initialize_logging(self) -> None:
            logging.getLogger("textual-serve").setLevel(logging.WARNING)

        async def on_startup(self, app: web.Application) -> None:
            print(visible(banner), flush=True)

        async def on_shutdown(self, app: web.Application) -> None:
            # Each browser tab's dashboard is a child: SIGTERM makes it quit cleanly (the demo stops its
            # servers), its page's connection then ends, and the server does not wait out its timeout.
            for child in psutil.Process().children():
                with contextlib.suppress(psutil.Error):
                    child.terminate()

        def serve(self, debug: bool = False) -> None:
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
            loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop, shutdown_timeout=5.0,
                        print=lambda *_a: None)

    host, number = sock.getsockname()[:2]
    return SymmServer(command, host=host, port=number, title="symmtui", public_url=url)
