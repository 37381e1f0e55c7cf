"""The `--metrics-port` / `--metrics-host` options (wait and the dashboard); the endpoint is the Session's plug-in."""

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
