"""The `stacks` verb: where every process of a server's tree is (py-spy), collapsed per rank, with hints."""

from __future__ import annotations

import argparse

from symmtui import boundary

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
    import json
    import sys
    from pathlib import Path

    from symmtui import clitext
    from symmtui.errors import UserError
    from symmtui.launch import proctree
    from symmtui.stacks.pyspy import DEFAULT_LIMIT, find_pyspy
    from symmtui.stacks.report import save, take

    find_pyspy()  # a missing py-spy is one line before any work
    log: Path | None = Path(args.log) if args.log else None
    if args.pid is not None:
        from symmtui.core.rules import user_ruleset

        ruleset = user_ruleset()  # the XDG catalogue's entries (hang hints among them) before the shipped ones
        procs = proctree.tree(args.pid)
        if not procs:
            raise UserError(f"no running process {args.pid}: give the pid of the server's main process")
    else:
        from symmtui.launch import state
        from symmtui.launch.profile import load_profile
        from symmtui.session.settings import bringup_settings

        profile = load_profile(args.config)
        ruleset = bringup_settings(profile).ruleset
        record = state.load(profile.key)
        if record is None:
            raise UserError("this profile has no running launch recorded: start it with symmtui launch, or "
                            "give --pid PID of the server's main process")
        procs = proctree.collect(record.pid, record.create_time, record.sid, record.pgid, record.launch_id)
        if not procs:
            raise UserError(f"the launch of pid {record.pid} is no longer running: nothing to dump")
        log = log if log is not None else Path(record.log_path)
    if log is not None:
        boundary.regular_file(log, what="--log", missing_ok=True, hint="give the server's log file")
    report = take(procs, log=log, native=args.native, limit=args.limit or DEFAULT_LIMIT, ruleset=ruleset)
    out = clitext.Writer()
    if args.json:
        out.raw(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        for line in report.lines():
            out.line(line)
    if log is not None and not args.no_save:
        path = save(report, log)
        clitext.Writer(sys.stderr).line(clitext.note_line(f"saved {path} (and .txt)"))
    return 0
