"""The `launch` verb: stop what this profile launched before, launch it again, wait like `symmtui wait`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symmtui.launch.profile import Profile

import shlex
import sys

from symmtui import boundary, clitext
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
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.launch.claim import claim
    from symmtui.launch.profile import load_profile

    profile = load_profile(args.config)
    # One `symmtui launch` of a profile at a time, from before the stop until the verdict: a second
    # one exits 4 here, having stopped, launched and written nothing.
    with claim(profile.key, f" --config {shlex.quote(args.config)}" if args.config else ""):
        return _launch_and_wait(args, profile)


def _launch_and_wait(args: argparse.Namespace, profile: Profile) -> int:
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.build import Limits, launch_spec, open_session
    from symmtui.judge.readiness import State
    from symmtui.launch.cliout import ProgressPrinter
    from symmtui.session.intents import Launch, StillRunning
    from symmtui.verbs.printer import Printer

    err = sys.stderr
    spec = launch_spec(profile, limits=Limits(timeout=args.timeout, stall=args.stall), grace=args.grace,
                       notify=args.notify, record_bundle=not args.no_record, bundle=args.bundle,
                       stacks=not args.no_stacks)
    session = open_session(spec)
    try:
        printer = Printer(session, err=err, stacks=not args.no_stacks and not session.named)
        result = session.ask(Launch(ProgressPrinter(err), preflight=not args.no_preflight,
                                    block_on_prediction=args.strict_preflight))
        for w in result.warnings:
            clitext.note(w, err)
        for (node, rec), log in zip(result.records, result.logs, strict=True):
            where = f"{node}: " if session.named else ""
            clitext.note(f"{where}launched pid {rec.pid}; log {log}", err)
        est = result.estimate
        if est is not None:
            took = f"{est.total:.1f}" if est.total < 60 else f"{est.total:.0f}"
            clitext.note(f"earlier launches of this command were ready after {took} s (median of {est.samples})", err)
        try:
            waited = printer.run()  # the session writes the launch history at the verdict
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP: the server goes on
            clitext.emit("", err)
            pids = ", ".join(str(rec.pid) for _node, rec in result.records)
            clitext.note(f"stopped waiting; the server is still running (pid {pids}); `symmtui stop` ends it", err)
            return boundary.interrupted_code(exc)
        if waited.state is not State.READY:
            alive = session.ask(StillRunning())
            if alive:
                where = f" on {', '.join(alive)}" if session.named else ""
                clitext.note(f"processes of this launch are still running{where}; `symmtui stop` ends them", err)
        return waited.exit_code
    finally:
        session.close()  # bounded: webhooks still in flight get FLUSH_BOUND seconds
