"""The `--metrics-port` / `--metrics-host` options (wait and the dashboard) and the server they start."""

from __future__ import annotations

import argparse
from typing import Any

from symmtui import boundary

DEFAULT_HOST = "127.0.0.1"


def port(text: str) -> int:
    """An argparse ``type``: a TCP port, 1..65535."""
    value = boundary.number(1, 65535, "a TCP port")(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"must be a whole port number, got {boundary.shown(text)}")
    return int(value)


def add_arguments(parser: Any, *, dest_prefix: str = "") -> None:
    """Add the options to ``parser`` (or an argument group); ``dest_prefix`` keeps the dashboard's apart."""
    parser.add_argument("--metrics-port", dest=f"{dest_prefix}metrics_port", metavar="N", type=port, default=None,
                        help="serve Prometheus metrics on http://HOST:N/metrics and /ready (200 only when READY)")
    parser.add_argument("--metrics-host", dest=f"{dest_prefix}metrics_host", metavar="ADDR", default=DEFAULT_HOST,
                        help=f"address the metrics endpoint listens on (default {DEFAULT_HOST}; 0.0.0.0: every interface)")


def serve(session: Any, port_number: int | None, host: str) -> Any:
    """Start the endpoint for ``session`` (None without --metrics-port); the caller closes it."""
    if port_number is None:
        return None
    from symmtui.session.metrics import serve_session

    return serve_session(session, host=host, port=port_number)


def serve_nodes(nodes: Any, port_number: int | None, host: str) -> Any:
    """The endpoint over every node of a ``[[nodes]]`` NodeSet (None without --metrics-port)."""
    if port_number is None:
        return None
    from symmtui.session.metrics import serve_nodes as serve_all

    return serve_all(nodes, host=host, port=port_number)


def linger(seconds: float, url: str | None = None) -> None:
    """Keep the endpoint answering with the verdict (a probe reads it) until ``seconds`` or Ctrl-C.

    Says so on stderr first (``url``: the endpoint's), inside the Ctrl-C guard: once that line is out,
    Ctrl-C ends the linger and the exit code stays the verdict's."""
    import threading

    from symmtui import clitext

    try:
        where = f" on {url}/ready" if url else ""
        clitext.note(f"serving the verdict{where} for {seconds:g} s (--metrics-linger); Ctrl-C ends it")
        threading.Event().wait(seconds)
    except KeyboardInterrupt:
        return
