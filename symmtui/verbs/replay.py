"""The `replay` verb: play a recorded bring-up (a bundle) in the dashboard."""

from __future__ import annotations

import argparse

from symmtui import boundary

HELP = "play a recorded bring-up (a bundle) in the dashboard: space pauses, left/right seek"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui replay`."""
    parser.add_argument("bundle", metavar="BUNDLE", type=boundary.path, help="a LOG.symmtui-bundle.json.gz")
    parser.add_argument("--speed", metavar="N", type=boundary.number(0.01, 10000.0, "times real time"), default=1.0,
                        help="timeline factor: 10 plays ten times faster than it happened (default 1)")
    parser.add_argument("--theme", metavar="NAME", default=None,
                        help="colour theme: symmtui-dark (default), symmtui-light, symmtui-contrast")


def run(args: argparse.Namespace) -> int:
    """Read the bundle (errors before the screen opens), then run the dashboard over it."""
    # Textual: the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.bundle.format import read_bundle
    from symmtui.bundle.replay import Recording
    from symmtui.ui.entry import check_theme, run_app
    from symmtui.ui.replay import ReplayApp

    recording = Recording(read_bundle(args.bundle))  # a damaged one: BundleError, one line
    chosen = check_theme(args.theme)
    boundary.require_terminal("the replay")
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.bundle.replay import ReplaySession

    session = ReplaySession(recording, speed=float(args.speed))
    try:
        result = run_app(ReplayApp(session, theme=chosen))
    finally:
        session.close()
    return result or 0
