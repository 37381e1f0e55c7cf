"""The `serve` verb: the dashboard (or the demo) in a browser, through textual-serve, on 127.0.0.1 by default."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from symmtui import boundary, clitext
from symmtui.errors import UserError
from symmtui.verbs import demo
from symmtui.verbs.metricsopts import port

if TYPE_CHECKING:  # socket and ipaddress are imported where used: every verb's start imports this module
    import socket

HELP = ("serve the dashboard (--config FILE) or the demo in a web browser (textual-serve's page): each browser "
        "tab runs its own dashboard; 127.0.0.1 only unless --host says otherwise; the printed URL carries a token")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui serve`: where to listen, then what to serve (a profile's dashboard, or the demo's options)."""
    parser.add_argument("--port", metavar="N", type=port, default=DEFAULT_PORT,
                        help=f"TCP port to listen on (default {DEFAULT_PORT})")
    parser.add_argument("--host", metavar="H", default=DEFAULT_HOST,
                        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; on another address "
                        "anyone with the printed URL, token included, who reaches it can drive the dashboard, "
                        "and a warning says so)")
    parser.add_argument("--config", metavar="FILE", type=boundary.path,
                        help="serve the dashboard of this launch profile (without it: the demo)")
    demo.add_arguments(parser)  # the demo's options (--theme also applies to a profile's dashboard)


def child_argv(args: argparse.Namespace) -> list[str]:
    """The dashboard each browser tab runs (this Python, this symmtui): a profile's, or the demo."""
    theme = ["--theme", args.theme] if args.theme else []
    if args.config is not None:
        return [sys.executable, "-m", "symmtui", "--config", str(Path(args.config).resolve()), *theme]
    parts = ["demo", "--speed", repr(float(args.speed)), "--story", args.story, "--nodes", str(args.nodes), *theme]
    if args.no_record:
        parts.append("--no-record")
    return [sys.executable, "-m", "symmtui", *parts]


def child_env() -> dict[str, str]:
    """The dashboard's environment: Textual's web driver (as textual-serve sets it), without the token."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from importlib.metadata import version

    from symmtui.verbs import serveauth

    env = {k: v for k, v in os.environ.items() if k != serveauth.TOKEN_ENV}
    env.update(TEXTUAL_DRIVER="textual.drivers.web_driver:WebDriver", TEXTUAL_FPS="60",
               TEXTUAL_COLOR_SYSTEM="truecolor", TERM_PROGRAM="textual",
               TERM_PROGRAM_VERSION=version("textual-serve"))
    return env


def resolve_token(host: str) -> str:
    """The token: $SYMMTUI_SERVE_TOKEN when set (empty: none, only on loopback), else a random one."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.verbs import serveauth

    given = os.environ.get(serveauth.TOKEN_ENV)
    if given is None:
        return serveauth.make_token()
    if given == "" and not is_loopback(host):
        raise UserError(f"--host {boundary.shown(host)} with an empty {serveauth.TOKEN_ENV}: anyone who reaches "
                        f"the port could drive the dashboard; unset {serveauth.TOKEN_ENV} (a random token goes "
                        "in the printed URL) or serve on 127.0.0.1 and use an SSH tunnel")
    if given and (len(given) < serveauth.MIN_TOKEN or not given.isprintable() or any(c in given for c in " &#?/")):
        raise UserError(f"{serveauth.TOKEN_ENV}: give at least {serveauth.MIN_TOKEN} printable characters, without "
                        "spaces, invisible characters or & # ? / (or unset it: a random token is made)")
    if given and len(quote(given, safe="")) > serveauth.MAX_TOKEN_URL:
        raise UserError(f"{serveauth.TOKEN_ENV}: {len(quote(given, safe=''))} characters once in a URL; at most "
                        f"{serveauth.MAX_TOKEN_URL} (a browser's request line must hold it): give a shorter token")
    return given


def allowed_names(host: str, sock: socket.socket) -> frozenset[str]:
    """Host/Origin names besides loopback: the bound address and ``--host``; on a wildcard address
    (0.0.0.0, ::) also this machine's addresses and host names."""
    import socket

    import psutil  # type: ignore[import-untyped,unused-ignore]

    from symmtui.verbs import serveauth

    bound = str(sock.getsockname()[0])
    extra = [host]
    if ipaddress.ip_address(bound.split("%")[0]).is_unspecified:
        extra += [socket.gethostname(), socket.getfqdn()]
        extra += [str(a.address).split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs
                  if a.family in (socket.AF_INET, socket.AF_INET6)]
    return serveauth.host_names(bound, extra)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is this machine's loopback ("localhost", 127.0.0.1, ::1)."""
    import socket  # the verb's work, imported when it runs (every start imports this module: cli.VERBS)

    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def listen(host: str, port_number: int) -> socket.socket:
    """A listening socket on ``host``:``port_number``; a bad host or a taken port is one UserError line."""
    import socket  # the verb's work, imported when it runs (every start imports this module: cli.VERBS)


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
            # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
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
    """Listen, say where (the URL carries the token), serve until Ctrl+C or SIGTERM (every tab's
    dashboard is hung up and quits cleanly first)."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.verbs import serveauth

    if args.config is not None:
        # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
        from symmtui.launch.profile import load_profile

        load_profile(args.config)  # a bad profile is one line now, not a broken page later
    if args.theme is not None:
        # Textual: the verb's work, imported when it runs (every start imports this module: cli.VERBS)
        from symmtui.ui.entry import check_theme

        check_theme(args.theme)
    token = resolve_token(args.host)
    sock = listen(args.host, args.port)
    url = url_of(sock)
    if not is_loopback(args.host):
        clitext.note(f"warning: listening on {args.host}: anyone who has the URL below and reaches the port can "
                     "drive this dashboard (relaunch, patch, stop), over unencrypted HTTP; an SSH tunnel to "
                     f"{DEFAULT_HOST} is safer", sys.stderr)
    elif not token:
        clitext.note(f"warning: {serveauth.TOKEN_ENV} is empty: every user of this machine can drive this "
                     "dashboard", sys.stderr)
    story = f"{args.nodes} nodes" if args.nodes > 1 else f"story {args.story}"
    what = f"the dashboard of {args.config}" if args.config is not None else f"the demo ({story})"

    page = f"{url}/?token={quote(token, safe='')}" if token else f"{url}/"  # `+` or `%41` in a fixed token: encoded
    guard = serveauth.Guard(token, int(sock.getsockname()[1]), allowed_names(args.host, sock))
    # aiohttp, textual-serve: the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.verbs.serveapp import serve

    serve(sock, guard, child_argv(args), child_env(), f"symmtui serve: {what} on {page} (Ctrl+C stops)")
    return 0
