"""The `report` verb: a recorded bundle as Markdown to paste into a GitHub issue."""

from __future__ import annotations

import argparse

from symmtui import boundary, clitext

HELP = "print a recorded bring-up (a bundle) as a Markdown report for a GitHub issue, secrets redacted"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui report`."""
    parser.add_argument("bundle", metavar="BUNDLE", nargs="?", type=boundary.path, default=None,
                        help="a *.symmtui-bundle.json.gz (default: the newest in $XDG_STATE_HOME/symmtui/bundles/)")
    parser.add_argument("--config", metavar="FILE", type=boundary.path,
                        help="report the newest bundle of this launch profile's logs instead")
    parser.add_argument("--tail", metavar="N", type=boundary.number(0, 5000, "lines"), default=100,
                        help="log lines in the collapsed tail block (default 100)")


def run(args: argparse.Namespace) -> int:
    """Read the bundle, print the report (exit 0), or one error line (exit 2)."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.bundle.find import find_bundle
    from symmtui.bundle.format import read_bundle
    from symmtui.bundle.report import markdown

    bundle = read_bundle(find_bundle(args.bundle, args.config))
    out = clitext.Writer()
    for line in markdown(bundle, tail=int(args.tail)).splitlines():
        out.line(line)
    return 0
