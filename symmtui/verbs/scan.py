"""The `scan` verb: a post-mortem of a finished server log (phases, errors, warnings, verdict)."""

from __future__ import annotations

import argparse

HELP = "read a whole finished server log once and report its phases, errors, warnings and verdict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui scan`."""
    parser.add_argument("path", metavar="PATH", help="the log file")
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema in the README)")
    parser.add_argument("--ready", metavar="REGEX", action="append", default=[], help="extra ready pattern")
    parser.add_argument("--crash", metavar="REGEX", action="append", default=[], help="extra crash pattern")


def run(args: argparse.Namespace) -> int:
    """Scan and print; exit 0 ready, 1 crashed, 3 no verdict, 2 unreadable file / bad pattern."""
    import json
    import os
    import sys

    from symmtui.core.rules import RuleSet
    from symmtui.core.scan import report_json, report_text, scan_file

    ruleset = RuleSet().with_user(ready=args.ready, crash=args.crash)
    rep = scan_file(args.path, ruleset)
    text = json.dumps(report_json(rep), indent=2) if args.json else "\n".join(report_text(rep))
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `symmtui scan ... | head`: the reader has what it wanted; the exit code still counts
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return rep.exit_code
