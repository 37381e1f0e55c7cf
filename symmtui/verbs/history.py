"""The `history` verb: the launches symmtui recorded, with their phases, verdicts and versions."""

from __future__ import annotations

import argparse

from symmtui import boundary, clitext

HELP = "the launch history: each launch's start, verdict, time to ready, phases and versions (--json: one object)"
MAX_ROWS = 50  # the latest launches shown in the table (--json gives them all)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", type=boundary.path,
                        help="only this profile's launches (default: every launch in the history)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


def run(args: argparse.Namespace) -> int:
    from symmtui.launch.history import History
    from symmtui.verbs.historytable import as_json, table

    hist = History()
    entries = hist.entries()
    if args.config:
        from symmtui.launch.profile import load_profile

        key = load_profile(args.config).key
        entries = [e for e in entries if e.profile_key == key]
    writer = clitext.Writer()
    if args.json:
        import json

        writer.raw(json.dumps(as_json(entries, str(hist.path), hist.skipped), indent=1) + "\n")
        return 0
    for line in table(entries, MAX_ROWS):
        writer.line(line)
    if hist.skipped:
        writer.line(f"({hist.skipped} unreadable line{'s' if hist.skipped != 1 else ''} of {hist.path} skipped)")
    return 0
