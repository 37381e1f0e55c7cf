"""The `stacks` verb: where every process of a server's tree is (py-spy), collapsed per rank, with hints."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from symmtui import boundary, clitext

HELP = ("show where every process of a server is: the Python stack of each (py-spy), identical stacks "
        "collapsed per rank, the phase and what to try; saved next to the launch's log")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui stacks`."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--config", metavar="FILE", type=boundary.path, help="the profile whose running launch to dump (default "
                       "./symmtui.toml, then the XDG config dir)")
    which.add_argument("--pid", metavar="PID", type=boundary.pid,
                       help="dump this process and every process it started (a server symmtui did not launch)")
    parser.add_argument("--log", metavar="PATH", type=boundary.path, help="the server's log: ranks and phase from it, the dump "
                        "saved beside it (default: the launch's log)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema symmtui.stacks/2)")
    parser.add_argument("--native", action="store_true",
                        help="add native frames (C/C++/CUDA: where NCCL or a CUDA call waits); slower")
    parser.add_argument("--limit", metavar="SECONDS", type=boundary.seconds(minimum=0.1, maximum=600), default=None,
                        help="time limit for each process's dump (default 10)")
    parser.add_argument("--no-save", action="store_true", help="print only; do not save the dump next to the log")


def run(args: argparse.Namespace) -> int:
    """Dump, print, save; exit 0, 2 nothing to dump, 3 ptrace refused for every process."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.build import open_session, stacks_spec
    from symmtui.session.intents import DumpStacks
    from symmtui.stacks.pyspy import DEFAULT_LIMIT, find_pyspy

    find_pyspy()  # a missing py-spy is one line before any work
    spec = stacks_spec(config=args.config, pid=args.pid, log=Path(args.log) if args.log else None)
    with open_session(spec) as session:
        report, saved = session.ask(DumpStacks(native=args.native, limit=args.limit or DEFAULT_LIMIT,
                                               keep=not args.no_save))
    out = clitext.Writer()
    if args.json:
        out.raw(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        for line in report.lines():
            out.line(line)
    if saved is not None:
        clitext.Writer(sys.stderr).line(clitext.note_line(f"saved {saved} (and .txt)"))
    return 0
