"""The `demo` verb (placeholder until its issue lands)."""

from __future__ import annotations

import argparse

HELP = "demo (not built yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options yet."""


def run(args: argparse.Namespace) -> int:
    print("symmtui: 'demo' is not built yet")
    return 2
