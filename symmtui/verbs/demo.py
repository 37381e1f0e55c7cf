"""The `demo` verb: the whole bring-up story offline (crash, diagnosis, patch, relaunch, ready)."""

from __future__ import annotations

import argparse

HELP = "play the whole story offline: a simulated 8-GPU server crashes with KeyError: 12, patch, relaunch, ready"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--speed", type=float, default=1.0, metavar="X",
                        help="timeline factor: 1 loads in about a minute, 10 in about 6 s (default 1)")
    parser.add_argument("--theme", default=None, metavar="NAME",
                        help="colour theme: symmtui-dark (default), symmtui-light, symmtui-contrast")


def run(args: argparse.Namespace) -> int:
    from symmtui.errors import UserError
    from symmtui.ui.entry import run_demo

    speed = float(args.speed)
    if not speed > 0 or speed != speed or speed == float("inf"):
        raise UserError(f"--speed must be a positive number, got {args.speed!r} (1 = a load of about a minute)")
    return run_demo(speed, args.theme)
