"""The `wait` verb: block until a server is ready (exit 0), crashed (1) or timed out (124)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from symmtui import boundary
from symmtui.bundle import BUNDLE_HELP, NO_RECORD_HELP

if TYPE_CHECKING:
    from symmtui.core.logcmd import LogCommand

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
    parser.add_argument("--ready", metavar="REGEX", action="append", default=[], type=boundary.regex,
                        help="extra ready pattern (repeatable; added to the built-in markers)")
    parser.add_argument("--crash", metavar="REGEX", action="append", default=[], type=boundary.regex,
                        help="extra crash pattern (repeatable)")
    parser.add_argument("--timeout", metavar="SECONDS", type=boundary.seconds(), default=None,
                        help="give up after this long (default 900, or the profile's; 0: never)")
    parser.add_argument("--stall", metavar="SECONDS", type=boundary.seconds(), default=None,
                        help="report STALLED after this long without a new line or progress (default 300; "
                        "0: never); it keeps waiting until the timeout")
    parser.add_argument("--new-only", action="store_true", help="ignore what is already in the log at start")
    parser.add_argument("--config", metavar="FILE", type=boundary.path, help="read log/url/timeout/stall/rules from a launch profile")
    from symmtui.verbs import metricsopts

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
    """Wait and print the verdict."""
    from symmtui.errors import UserError
    from symmtui.session import AttachSpec, for_attach, for_profile
    from symmtui.session.headless import Headless

    log: Path | None = Path(args.log) if args.log else None
    log_cmd = log_command_option(args.log_cmd, args.log_cmd_shell, log=args.log, new_only=args.new_only)
    url: str | None = args.url
    profile = None
    if args.config:
        from symmtui.launch.profile import load_profile

        profile = load_profile(args.config)
        if profile.nodes:
            from symmtui.verbs import nodes

            return nodes.wait(args, profile)
        if log is None and log_cmd is None:
            log_cmd = profile.log_cmd
            log = profile.log_path if log_cmd is None else None
        url = url if url is not None else profile.url
    if log is None and log_cmd is None and url is None:
        raise UserError("nothing to watch: give --log PATH, --log-cmd CMD and/or --url URL "
                        "(or --config FILE with a log, log_cmd or url)")
    if log_cmd is not None:
        log_cmd.check()
    if log is not None:
        boundary.regular_file(log, what="--log", missing_ok=True,
                              hint="give the server's log file (it may not exist yet)")
    spec = AttachSpec(log=log, url=url, pid=args.pid, ready=args.ready, crash=args.crash, timeout=args.timeout,
                      stall=args.stall)
    if profile is None:
        session = for_attach(spec)
    else:
        session = for_profile(profile, ready=spec.ready, crash=spec.crash, timeout=spec.timeout, stall=spec.stall)
        if url is not None:
            from symmtui.core.probe import check_url

            check_url(url)
            session.url = url
    import sys

    from symmtui.verbs import metricsopts

    server = metricsopts.serve(session, args.metrics_port, args.metrics_host)  # a taken port: nothing started yet
    notify = profile.notify if profile is not None else None
    notifier = None
    if args.notify or notify is not None:  # the notifier's modules are imported only when it notifies
        from symmtui.notify.notifier import for_headless

        notifier = for_headless(session, notify, asked=args.notify, err=sys.stderr)
    try:
        if not args.no_record or args.bundle:  # the recorder's modules likewise
            from symmtui.bundle.wire import record_session, server_command

            record_session(session, server_command(profile, args.pid), enabled=not args.no_record,
                           dest=args.bundle, announce=sys.stderr)
        front = Headless(session)
        session.follow(log_cmd or log, pid=args.pid, new_only=args.new_only)
        stacks = not args.no_stacks and (args.pid is not None or profile is not None)
        if stacks:
            from symmtui.gpu.nvml import Nvml

            session.stall_nvml = Nvml()  # read once at a stall (nothing is sampled before): the GPUs' evidence
        result = front.verdict(stacks=stacks)
        if notifier is not None:
            notifier.finish(result.snapshot)  # bounded: webhooks still in flight get FLUSH_BOUND seconds
        if server is not None and args.metrics_linger:
            metricsopts.linger(args.metrics_linger, server.url)
        return result.exit_code
    finally:
        if server is not None:
            server.close()


def log_command_option(text: str | None, shell: bool, *, log: str | None, new_only: bool = False) -> LogCommand | None:
    """``--log-cmd`` / ``--log-cmd-shell`` (shared with the dashboard): the command, checked for what
    can be told without running it; None without ``--log-cmd``."""
    from symmtui.errors import UserError

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
    from symmtui.core.logcmd import LogCommand

    return LogCommand.parse(text, shell=shell)

