"""The dashboard (no verb): `symmtui [--config FILE] [--log PATH] [--url URL] [--theme NAME]`."""

from __future__ import annotations

import argparse

from symmtui import boundary
from symmtui.bundle import BUNDLE_HELP, NO_RECORD_HELP
from symmtui.verbs import metricsopts
from symmtui.verbs.wait import log_command_option

HELP = "the dashboard: GPUs, topology, readiness, log, diagnosis; patch and relaunch from the keyboard"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the top-level parser (distinct dests, so verbs' own options never clash)."""
    group = parser.add_argument_group("dashboard (when no verb is given)")
    group.add_argument("--config", dest="dash_config", metavar="FILE", type=boundary.path, default=None,
                       help="launch profile (default: ./symmtui.toml, then $XDG_CONFIG_HOME/symmtui/symmtui.toml)")
    group.add_argument("--log", dest="dash_log", metavar="PATH", type=boundary.path, default=None,
                       help="attach to this server log (overrides the profile's)")
    group.add_argument("--log-cmd", dest="dash_log_cmd", metavar="CMD", default=None,
                       help="read the log from this command's output, e.g. 'kubectl logs -f pod/x' (split like a "
                       "shell would, run without one; restarted with backoff when it exits)")
    group.add_argument("--log-cmd-shell", dest="dash_log_cmd_shell", action="store_true",
                       help="run --log-cmd through /bin/sh -c")
    group.add_argument("--url", dest="dash_url", metavar="URL", default=None,
                       help="probe this health URL, e.g. http://127.0.0.1:30000/health")
    group.add_argument("--gpus", dest="dash_gpus", metavar="SPEC", action="append", default=None,
                       help='where to read the GPUs: "nvml" (this machine, the default) or an exporter\'s URL, '
                       "e.g. http://127.0.0.1:9400/metrics (dcgm-exporter, nvitop-exporter, a Prometheus "
                       "server's /api/v1/query); repeat for several (overrides the profile's server.gpus)")
    group.add_argument("--theme", dest="dash_theme", metavar="NAME", default=None,
                       help="colour theme: symmtui-dark (default), symmtui-light, symmtui-contrast")

    metricsopts.add_arguments(group, dest_prefix="dash_")
    group.add_argument("--no-record", dest="dash_no_record", action="store_true", help=NO_RECORD_HELP)
    group.add_argument("--bundle", dest="dash_bundle", metavar="PATH", type=boundary.path, help=BUNDLE_HELP)
    group.add_argument("--no-auto-stacks", dest="dash_no_auto_stacks", action="store_true",
                       help="do not dump the server's stacks when the state becomes STALLED (the s key still does)")
    group.add_argument("--notify", dest="dash_notify", action="store_true",
                       help="notify each verdict: bell, tmux message, desktop notification, the profile's [notify] "
                       "webhooks (on by default when the profile has [notify])")


def run(args: argparse.Namespace) -> int:
    # Textual: only the dashboard (every start imports this module: cli.DASHBOARD)
    from symmtui.ui.entry import run_dashboard

    if args.dash_log is not None:
        boundary.regular_file(args.dash_log, what="--log", missing_ok=True,
                              hint="give the server's log file (it may not exist yet)")
    # a program that cannot start is not an error here: the dashboard shows it and keeps trying (wait exits 2)
    log_cmd = log_command_option(args.dash_log_cmd, args.dash_log_cmd_shell, log=args.dash_log)
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.gpu.specs import check_specs

    gpus = check_specs(args.dash_gpus or (), "--gpus")

    return run_dashboard(args.dash_config, args.dash_log, args.dash_url, args.dash_theme,
                         auto_stacks=not args.dash_no_auto_stacks, notify=args.dash_notify, log_cmd=log_cmd,
                         metrics=(args.dash_metrics_port, args.dash_metrics_host),
                         record=not args.dash_no_record, gpus=gpus, bundle=args.dash_bundle)
