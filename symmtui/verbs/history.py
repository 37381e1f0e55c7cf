"""The `history` verb: the launches symmtui recorded, with their phases, verdicts and versions; `--diff`: what
changed between two of them."""

from __future__ import annotations

import argparse
import json

from symmtui import boundary, clitext

HELP = ("the launch history: each launch's start, verdict, time to ready, phases and versions (--json: one "
        "object); --diff [A] [B]: what changed between two launches")
MAX_ROWS = 50  # the latest launches shown in the table (--json gives them all)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", type=boundary.path,
                        help="only this profile's launches (default: every launch in the history)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--diff", nargs="*", metavar="LAUNCH",
                        help="what changed from launch A to launch B (a number of the table's # column, -1 the "
                             "last, or a launch id or its first characters); one launch: against the last READY "
                             "launch of its profile before it; none: the last launch so")


def run(args: argparse.Namespace) -> int:
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.launch.history import History
    from symmtui.verbs.historytable import as_json, diff, table

    hist = History()
    entries = hist.entries()
    if args.config:
        # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
        from symmtui.launch.profile import load_profile

        key = load_profile(args.config).key
        entries = [e for e in entries if e.profile_key == key]
    writer = clitext.Writer()
    if args.diff is not None:
        lines, doc = diff(entries, args.diff)
        doc = {"history": str(hist.path), "skipped": hist.skipped, **doc}
        if args.json:
            writer.raw(json.dumps(doc, indent=1) + "\n")
            return 0
    elif args.json:
        writer.raw(json.dumps(as_json(entries, str(hist.path), hist.skipped), indent=1) + "\n")
        return 0
    else:
        lines = table(entries, MAX_ROWS)
    for line in lines:
        writer.line(line)
    if hist.skipped:
        writer.line(f"({hist.skipped} unreadable line{'s' if hist.skipped != 1 else ''} of {hist.path} skipped)")
    return 0
