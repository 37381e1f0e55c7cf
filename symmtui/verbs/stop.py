"""The `stop` verb: stop what this profile launched (whole tree), wait for GPU memory and the port."""

from __future__ import annotations

import argparse
import sys

from symmtui import boundary

HELP = "stop the server this profile launched (SIGTERM, grace, SIGKILL; then GPU memory and port)"

EXIT_OK = 0
EXIT_HELD = 3  # our processes are gone, but the port / GPU memory is still held (strangers listed)
EXIT_SURVIVOR = 4  # a process of ours survived SIGKILL


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
    from symmtui.launch import load_profile

    profile = load_profile(args.config)  # first: a bad profile is reported before the engine is imported
    if profile.nodes:
        from symmtui.verbs import nodes

        return nodes.stop(args, profile)
    from symmtui import clitext
    from symmtui.errors import UserError
    from symmtui.gpu.facts import open_nvml
    from symmtui.launch.cliout import ProgressPrinter, print_report
    from symmtui.session import for_profile

    session = for_profile(profile, nvml=open_nvml(), grace=args.grace, gpu_timeout=args.gpu_timeout,
                          port_timeout=args.port_timeout)
    sup = session.supervisor
    assert sup is not None
    report = session.stop(ProgressPrinter(sys.stderr))
    if args.kill_pid is not None:
        if not any(s.pid == args.kill_pid for s in report.strangers):
            print_report(report, sys.stdout)
            raise UserError(
                f"pid {args.kill_pid} does not hold this profile's port or GPU memory; not signalled"
            )
        if not sup.kill_stranger(args.kill_pid, args.kill_pid):
            raise UserError(f"pid {args.kill_pid} is still running after SIGTERM and SIGKILL (another user's "
                            "process, or stuck in the kernel/driver)", exit_code=EXIT_SURVIVOR)
        clitext.emit(f"pid {args.kill_pid} ended (you confirmed it)")
        report = session.stop(ProgressPrinter(sys.stderr))
    print_report(report, sys.stdout)
    if report.survivors:
        return EXIT_SURVIVOR
    if not report.clean:
        return EXIT_HELD
    return EXIT_OK
