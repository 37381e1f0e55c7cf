"""The `scan` verb: a post-mortem of a finished server log (phases, errors, warnings, verdict)."""

from __future__ import annotations

import argparse
import json

from symmtui import boundary, clitext

HELP = "read a whole finished server log once and report its phases, errors, warnings and verdict"
SCHEMA = "symmtui.scan/1"
"""The ``schema`` of ``scan --json``: fields are only ever added under it, never renamed."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui scan`."""
    parser.add_argument("path", metavar="PATH", type=boundary.path, help="the log file")
    parser.add_argument("--json", action="store_true", help=f"print one JSON object (schema {SCHEMA}: docs/verbs.md)")
    parser.add_argument("--ready", metavar="REGEX", action="append", default=[], help="extra ready pattern")
    parser.add_argument("--crash", metavar="REGEX", action="append", default=[], help="extra crash pattern")


def run(args: argparse.Namespace) -> int:
    """Scan and print; exit 0 ready, 1 crashed, 3 no verdict, 2 unreadable file / bad pattern."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.bringup.scan import report_json, report_text, scan_file
    from symmtui.judge.rules import user_ruleset

    ruleset = user_ruleset(args.ready, args.crash)
    try:
        rep = scan_file(args.path, ruleset)
    except OSError as exc:  # a regular file that cannot be read (EIO on a failing disk, /proc/self/mem)
        raise boundary.InputError(f"cannot scan {boundary.shown(args.path)}: reading it failed "
                                  f"({exc.strerror or exc}); give a readable log file") from None
    out = clitext.Writer()  # sanitised lines; `symmtui scan ... | head` keeps the exit code
    if args.json:  # json.dumps escapes every control character itself

        doc = {"schema": SCHEMA, **report_json(rep)}
        for line in json.dumps(clitext.headless_json(doc), indent=2).split("\n"):
            out.line(line)
    else:
        for line in report_text(rep):
            out.line(line)
    return rep.exit_code
