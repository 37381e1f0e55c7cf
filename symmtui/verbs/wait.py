"""The `wait` verb: block until a server is ready (exit 0), crashed (1) or timed out (124)."""

from __future__ import annotations

import argparse
from pathlib import Path

from symmtui import boundary

HELP = "wait for a server to be ready: follow its log (and /health, and its pid); exit 0 ready, 1 crashed, 124 timed out"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui wait`."""
    parser.add_argument("--log", metavar="PATH", type=boundary.path, help="the server's log file (may not exist yet)")
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
    parser.add_argument("--no-stacks", action="store_true",
                        help="on STALLED, do not dump the server's stacks (by default, with --pid or a profile's "
                        "launch, the collapsed summary is printed under the STALLED line: symmtui stacks)")
    parser.add_argument("--notify", action="store_true",
                        help="notify each verdict: terminal bell, tmux message, desktop notification, and the "
                        "profile's [notify] webhooks (on by default when the profile has [notify])")


def run(args: argparse.Namespace) -> int:
    """Wait and print the verdict."""
    from symmtui.errors import UserError
    from symmtui.session import AttachSpec, for_attach, for_profile
    from symmtui.session.headless import Headless

    log: Path | None = Path(args.log) if args.log else None
    url: str | None = args.url
    profile = None
    if args.config:
        from symmtui.launch.profile import load_profile

        profile = load_profile(args.config)
        if profile.nodes:
            from symmtui.verbs import nodes

            return nodes.wait(args, profile)
        log = log if log is not None else profile.log_path
        url = url if url is not None else profile.url
    if log is None and url is None:
        raise UserError("nothing to watch: give --log PATH and/or --url URL (or --config FILE with a log or url)")
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

    from symmtui.notify.notifier import for_headless

    notifier = for_headless(session, profile.notify if profile is not None else None, asked=args.notify,
                            err=sys.stderr)
    front = Headless(session)
    session.follow(log, pid=args.pid, new_only=args.new_only)
    stacks = not args.no_stacks and (args.pid is not None or profile is not None)
    result = front.verdict(stacks=stacks)
    if notifier is not None:
        notifier.finish(result.snapshot)  # bounded: webhooks still in flight get FLUSH_BOUND seconds
    return result.exit_code
