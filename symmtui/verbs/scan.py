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

    from symmtui import clitext
    from symmtui.core.rules import RuleSet
    from symmtui.core.scan import report_json, report_text, scan_file

    ruleset = RuleSet().with_user(ready=args.ready, crash=args.crash)
    rep = scan_file(args.path, ruleset)
    out = clitext.Writer()  # sanitised lines; `symmtui scan ... | head` keeps the exit code
    if args.json:  # json.dumps escapes every control character itself
        for line in json.dumps(report_json(rep), indent=2).split("\n"):
            out.line(line)
    else:
        for line in report_text(rep):
            out.line(line)
    return rep.exit_code
