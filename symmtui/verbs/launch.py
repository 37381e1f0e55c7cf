"""The `launch` verb: stop what this profile launched before, launch it again, wait like `symmtui wait`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symmtui.launch.profile import Profile

from symmtui import boundary
from symmtui.bundle import BUNDLE_HELP, NO_RECORD_HELP

HELP = "launch the profile's server (stopping the previous one) and wait for it like `symmtui wait`"

EXIT_BLOCKED = 4  # the port is still held by a stranger, or a process survived SIGKILL
EXIT_PREFLIGHT = 3  # --strict-preflight and the patch check predicts a KeyError crash


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", type=boundary.path, help="profile (default ./symmtui.toml, then the XDG config dir)")
    parser.add_argument("--timeout", type=boundary.seconds(), metavar="S", help="give up after S seconds (default: the profile's, 900; 0: never)")
    parser.add_argument("--stall", type=boundary.seconds(), metavar="S", help="stalled after S seconds without progress (default: the profile's, 300; 0: never)")
    parser.add_argument("--grace", type=boundary.seconds(), metavar="S", help="stopping the previous server: SIGTERM to SIGKILL (default 30)")
    parser.add_argument("--no-preflight", action="store_true", help="skip the SM120 patch check before launching")
    parser.add_argument("--no-stacks", action="store_true",
                        help="on STALLED, do not dump the server's stacks under the STALLED line")
    parser.add_argument("--notify", action="store_true",
                        help="notify each verdict (bell, tmux, desktop, the profile's [notify] webhooks; "
                        "on by default when the profile has [notify])")
    parser.add_argument("--no-record", action="store_true", help=NO_RECORD_HELP)
    parser.add_argument("--bundle", metavar="PATH", type=boundary.path, help=BUNDLE_HELP)
    parser.add_argument(
        "--strict-preflight", action="store_true",
        help="refuse to launch (exit 3) when the patch check predicts the KeyError crash (default: warn)",
    )


def run(args: argparse.Namespace) -> int:
    import shlex

    from symmtui.errors import UserError
    from symmtui.launch import load_profile
    from symmtui.launch.claim import claim

    profile = load_profile(args.config)
    if profile.nodes:
        from symmtui.verbs import nodes

        with claim(profile.key, f" --config {shlex.quote(args.config)}" if args.config else ""):
            return nodes.launch(args, profile)
    if profile.attach_only:
        raise UserError(f"cannot launch: {profile.attach_reason}")
    # One `symmtui launch` of a profile at a time, from before the stop until the verdict: a second
    # one exits 4 here, having stopped, launched and written nothing.
    with claim(profile.key, f" --config {shlex.quote(args.config)}" if args.config else ""):
        return _launch_and_wait(args, profile)


def _launch_and_wait(args: argparse.Namespace, profile: Profile) -> int:
    import sys

    from symmtui import clitext
    from symmtui.core.readiness import State
    from symmtui.gpu.facts import open_nvml
    from symmtui.launch.cliout import ProgressPrinter
    from symmtui.session import for_profile
    from symmtui.session.headless import Headless

    session = for_profile(profile, nvml=open_nvml(), timeout=args.timeout, stall=args.stall, grace=args.grace)
    sup = session.supervisor
    assert sup is not None
    err = sys.stderr
    from symmtui.notify.notifier import for_headless

    notifier = for_headless(session, profile.notify, asked=args.notify, err=err)
    from symmtui.bundle.wire import record_session, server_command

    record_session(session, server_command(profile), enabled=not args.no_record, dest=args.bundle, err=err, announce=err)
    front = Headless(session, err)
    try:
        result = session.launch(ProgressPrinter(err), preflight=not args.no_preflight,
                                block_on_prediction=args.strict_preflight)
    except BaseException:
        session.close()
        raise
    for w in result.warnings:
        clitext.note(w, err)
    rec = result.record
    clitext.note(f"launched pid {rec.pid}; log {rec.log_path}", err)
    est = sup.estimate()
    if est is not None:
        took = f"{est.total:.1f}" if est.total < 60 else f"{est.total:.0f}"
        clitext.note(f"earlier launches of this command were ready after {took} s (median of {est.samples})", err)
    try:
        waited = front.verdict(stacks=not args.no_stacks)  # the session writes the launch history at the verdict
    except KeyboardInterrupt:
        clitext.emit("", err)
        clitext.note(f"stopped waiting; the server is still running (pid {rec.pid}); `symmtui stop` ends it", err)
        return 130
    if notifier is not None:
        notifier.finish(waited.snapshot)  # bounded: webhooks still in flight get FLUSH_BOUND seconds
    if waited.state is not State.READY and sup.is_alive(rec):
        clitext.note("processes of this launch are still running; `symmtui stop` ends them", err)
    return waited.exit_code
