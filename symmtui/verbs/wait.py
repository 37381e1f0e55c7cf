"""The `wait` verb: block until a server is ready (exit 0), crashed (1) or timed out (124)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from symmtui import boundary
from symmtui.bundle import BUNDLE_HELP, NO_RECORD_HELP
from symmtui.errors import UserError
from symmtui.verbs import metricsopts

if TYPE_CHECKING:
    from symmtui.logs.logcmd import LogCommand

HELP = "wait for a server to be ready: follow its log (and /health, and its pid); exit 0 ready, 1 crashed, 124 timed out"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui wait`."""
    parser.add_argument("--log", metavar="PATH", type=boundary.path, help="the server's log file (may not exist yet)")
    parser.add_argument("--log-cmd", metavar="CMD",
                        help="read the log from this command's output instead of a file, e.g. 'docker logs -f sglang' "
                        "(split like a shell would, run without one; restarted with backoff when it exits)")
    parser.add_argument("--log-cmd-shell", action="store_true",
                        help="run --log-cmd through /bin/sh -c (pipes, globs, $VARS)")
    parser.add_argument("--url", metavar="URL", help="health URL, e.g. http://127.0.0.1:30000/health (200 = up)")
    parser.add_argument("--pid", metavar="PID", type=boundary.pid, help="the server's process: its exit means CRASHED")
    parser.add_argument("--ready", metavar="REGEX", action="append", default=[],
                        help="extra ready pattern (repeatable; added to the built-in markers)")
    parser.add_argument("--crash", metavar="REGEX", action="append", default=[],
                        help="extra crash pattern (repeatable)")
    parser.add_argument("--timeout", metavar="SECONDS", type=boundary.seconds(), default=None,
                        help="give up after this long (default 900, or the profile's; 0: never)")
    parser.add_argument("--stall", metavar="SECONDS", type=boundary.seconds(), default=None,
                        help="report STALLED after this long without a new line or progress (default 300; "
                        "0: never); it keeps waiting until the timeout")
    parser.add_argument("--new-only", action="store_true", help="ignore what is already in the log at start")
    parser.add_argument("--config", metavar="FILE", type=boundary.path, help="read log/url/timeout/stall/rules from a launch profile")
    metricsopts.add_arguments(parser)
    parser.add_argument("--metrics-linger", metavar="S", type=boundary.seconds(), default=0.0,
                        help="with --metrics-port: keep answering /metrics and /ready with the verdict for S seconds "
                        "after it (default 0: stop with the wait); Ctrl-C ends it early")
    parser.add_argument("--no-stacks", action="store_true",
                        help="on STALLED, do not dump the server's stacks (by default, with --pid or a profile's "
                        "launch, the collapsed summary is printed under the STALLED line: symmtui stacks)")
    parser.add_argument("--notify", action="store_true",
                        help="notify each verdict: terminal bell, tmux message, desktop notification, and the "
                        "profile's [notify] webhooks (on by default when the profile has [notify])")
    parser.add_argument("--no-record", action="store_true", help=NO_RECORD_HELP)
    parser.add_argument("--bundle", metavar="PATH", type=boundary.path, help=BUNDLE_HELP)


def run(args: argparse.Namespace) -> int:
    """Wait and print the verdict (the Session's close then flushes the notifier and ends the metrics linger)."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.build import Limits, open_session, wait_spec
    from symmtui.verbs.printer import Printer

    log_cmd = log_command_option(args.log_cmd, args.log_cmd_shell, log=args.log, new_only=args.new_only)
    stacks = not args.no_stacks
    spec = wait_spec(log=Path(args.log) if args.log else None, log_cmd=log_cmd, url=args.url, pid=args.pid,
                     config=args.config, limits=Limits(args.ready, args.crash, args.timeout, args.stall),
                     new_only=args.new_only, stacks=stacks, notify=args.notify, record_bundle=not args.no_record,
                     metrics_port=args.metrics_port, metrics_host=args.metrics_host,
                     metrics_linger=args.metrics_linger, bundle=args.bundle)
    session = open_session(spec)  # a taken metrics port: one line, nothing started
    try:
        printer = Printer(session, stacks=stacks and spec.stacks_gpus)
        return printer.run().exit_code
    finally:
        session.close()


def log_command_option(text: str | None, shell: bool, *, log: str | None, new_only: bool = False) -> LogCommand | None:
    """``--log-cmd`` / ``--log-cmd-shell`` (shared with the dashboard): the command, checked for what
    can be told without running it; None without ``--log-cmd``."""
    if text is None:
        if shell:
            raise UserError("--log-cmd-shell goes with --log-cmd CMD (it runs CMD through /bin/sh -c)")
        return None
    if log is not None:
        raise UserError("give --log PATH (a file) or --log-cmd CMD (a command), not both")
    if new_only:
        raise UserError("--new-only skips what a log file holds at start; a log command decides what it prints "
                        "first: use its own option (docker logs -f --since 0s, kubectl logs -f --since=1s, "
                        "tail -n 0 -F, journalctl -f -n 0)")
    from symmtui.logs.logcmd import LogCommand  # subprocess, pipes: only --log-cmd

    return LogCommand.parse(text, shell=shell)

