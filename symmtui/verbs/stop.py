"""The `stop` verb: stop what this profile launched (whole tree), wait for GPU memory and the port."""

from __future__ import annotations

import argparse
import sys

from symmtui import boundary, clitext
from symmtui.errors import UserError

HELP = "stop the server this profile launched (SIGTERM, grace, SIGKILL; then GPU memory and port)"

EXIT_OK = 0
EXIT_HELD = 3  # our processes are gone, but the port / GPU memory is still held (strangers listed)
EXIT_SURVIVOR = 4  # a process of ours survived SIGKILL
EXIT_UNREACHED = 5  # several nodes: a node could not be reached (its stop command failed); the others were stopped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", type=boundary.path, help="profile (default ./symmtui.toml, then the XDG config dir)")
    parser.add_argument("--grace", type=boundary.seconds(), metavar="S", help="seconds between SIGTERM and SIGKILL (default: the profile's, 30)")
    parser.add_argument(
        "--kill-pid", type=boundary.pid, metavar="PID",
        help="also end PID, a process symmtui did not start that holds the port or GPU memory (you confirm that pid)",
    )
    parser.add_argument("--gpu-timeout", type=boundary.seconds(), default=60.0, metavar="S", help="wait this long for GPU memory (default 60)")
    parser.add_argument("--port-timeout", type=boundary.seconds(), default=30.0, metavar="S", help="wait this long for the port (default 30)")


def run(args: argparse.Namespace) -> int:
    """Stop every node; the exit code says what is left (see docs/verbs.md)."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.launch.profile import load_profile

    profile = load_profile(args.config)  # first: a bad profile is reported before the engine is imported
    # the session (~150 ms): a missing profile (the error path) exits before it
    from symmtui.build import open_session, stop_spec
    from symmtui.launch.cliout import ProgressPrinter, print_report
    from symmtui.session.intents import KillStranger, Stop

    spec = stop_spec(profile, grace=args.grace, gpu_timeout=args.gpu_timeout, port_timeout=args.port_timeout,
                     kill_pid=args.kill_pid)
    with open_session(spec) as session:
        results = session.ask(Stop(ProgressPrinter(sys.stderr)))
        if args.kill_pid is not None:  # one node (stop_spec refused it for several)
            report = results[0].report
            if report is None or not any(s.pid == args.kill_pid for s in report.strangers):
                if report is not None:
                    print_report(report, sys.stdout)
                raise UserError(f"pid {args.kill_pid} does not hold this profile's port or GPU memory; not signalled")
            if not session.ask(KillStranger(args.kill_pid)):
                raise UserError(f"pid {args.kill_pid} is still running after SIGTERM and SIGKILL (another user's "
                                "process, or stuck in the kernel/driver)", exit_code=EXIT_SURVIVOR)
            clitext.emit(f"pid {args.kill_pid} ended (you confirmed it)")
            results = session.ask(Stop(ProgressPrinter(sys.stderr)))
    w = clitext.Writer(sys.stdout)
    for result in results:
        where = f"{result.node}: " if session.named else ""
        if result.command is not None:
            w.line(result.command.line())
        if result.error is not None:
            w.line(f"{result.node}: not stopped: {result.error}")
        if result.report is not None:
            print_report(result.report, sys.stdout, prefix=where)
        elif result.command is None and result.error is None:
            w.line(f"{where}no launch and no stop command: nothing to stop")
    unreached = [r.node for r in results if not r.reached]
    if unreached:
        clitext.print_error(f"not every node was stopped ({', '.join(unreached)}): see the lines above; "
                            "check the node is reachable, then run symmtui stop again")
        return EXIT_UNREACHED
    reports = [r.report for r in results if r.report is not None]
    if any(rep.survivors for rep in reports):
        return EXIT_SURVIVOR
    if not all(rep.clean for rep in reports):
        return EXIT_HELD
    return EXIT_OK
