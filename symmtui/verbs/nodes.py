"""`wait`, `launch` and `stop` for a multi-node profile ([[nodes]]): every node, each line named by its node."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

from symmtui import clitext

if TYPE_CHECKING:
    from symmtui.launch.profile import Profile
    from symmtui.launch.report import OnProgress

EXIT_UNREACHED = 5  # stop: a node could not be reached (its stop command failed); the others were stopped
EXIT_SURVIVOR = 4


def _progress(err: TextIO) -> Callable[[str], OnProgress]:
    """Each node's stop/launch progress, its lines prefixed with the node's name (no GPU/port steps:
    a node's GPUs and port are not on this host)."""
    from symmtui.launch.cliout import ProgressPrinter
    from symmtui.launch.report import Progress, Step

    def for_node(name: str) -> OnProgress:
        printer = ProgressPrinter(err)

        def show(p: Progress) -> None:
            if p.step not in (Step.GPU, Step.PORT):
                printer(replace(p, message=f"{name}: {p.message}"))

        return show

    return for_node


def wait(args: argparse.Namespace, profile: Profile) -> int:
    """`symmtui wait --config` of a [[nodes]] profile: follow every node's log, judge them together."""
    from symmtui.errors import UserError
    from symmtui.session.nodes import for_nodes
    from symmtui.session.nodeswait import NodesHeadless

    if args.log is not None or args.pid is not None or args.log_cmd is not None:
        raise UserError(f"{profile.path} lists [[nodes]]: each node names its own log; "
                        "drop --log/--log-cmd/--pid (or watch one node with symmtui wait --log FILE)")
    from symmtui.verbs import metricsopts

    nodes = for_nodes(profile, timeout=args.timeout, stall=args.stall, ready=args.ready, crash=args.crash,
                      url=args.url)
    try:
        server = metricsopts.serve_nodes(nodes, args.metrics_port, args.metrics_host)  # every node, one endpoint
    except BaseException:
        nodes.close()
        raise
    from symmtui.bundle.wire import record_nodes
    from symmtui.notify.nodes import for_headless_nodes

    record_nodes(nodes, enabled=not args.no_record, err=sys.stderr, dest=args.bundle)  # before the front end attaches
    notifier = for_headless_nodes(nodes, profile.notify, asked=args.notify, err=sys.stderr)
    try:
        front = NodesHeadless(nodes)
        try:
            nodes.follow(new_only=args.new_only)
        except BaseException:
            nodes.close()
            raise
        code = front.verdict().exit_code
        if notifier is not None:
            notifier.finish()  # bounded: webhooks still in flight get FLUSH_BOUND seconds
        if server is not None and args.metrics_linger:
            metricsopts.linger(args.metrics_linger, server.url)
        return code
    finally:
        if server is not None:
            server.close()


def launch(args: argparse.Namespace, profile: Profile) -> int:
    """`symmtui launch` of a [[nodes]] profile: stop, start every node's command, wait for the aggregate."""
    from symmtui.bundle.wire import record_nodes
    from symmtui.core.readiness import State
    from symmtui.notify.nodes import for_headless_nodes
    from symmtui.session.nodes import for_nodes
    from symmtui.session.nodeswait import NodesHeadless

    err = sys.stderr
    nodes = for_nodes(profile, timeout=args.timeout, stall=args.stall, grace=args.grace)
    record_nodes(nodes, enabled=not args.no_record, err=err, dest=args.bundle)  # before the front end attaches
    notifier = for_headless_nodes(nodes, profile.notify, asked=args.notify, err=err)
    front = NodesHeadless(nodes, err)
    try:
        records = nodes.launch(_progress(err))
    except BaseException:
        nodes.close()
        raise
    for node, rec in zip(nodes.nodes, records, strict=True):
        clitext.note(f"{node.spec.name}: launched pid {rec.pid} ({node.spec.launch_text}); log {node.source_text}",
                     err)
    try:
        waited = front.verdict()
    except KeyboardInterrupt:
        clitext.emit("", err)
        clitext.note("stopped waiting; the nodes are still running; `symmtui stop` ends them", err)
        return 130
    if notifier is not None:
        notifier.finish()  # bounded: webhooks still in flight get FLUSH_BOUND seconds
    if waited.state is not State.READY:
        alive = [n.spec.name for n in nodes.nodes
                 if n.session.supervisor is not None and n.session.supervisor.is_alive()]
        if alive:
            clitext.note(f"launches still running on {', '.join(alive)}; `symmtui stop` ends them", err)
    return waited.exit_code


def stop(args: argparse.Namespace, profile: Profile) -> int:
    """`symmtui stop` of a [[nodes]] profile: every node's stop command and local launch, all at once."""
    from symmtui.errors import UserError
    from symmtui.session.nodes import for_nodes

    if args.kill_pid is not None:
        raise UserError(f"{profile.path} lists [[nodes]]: --kill-pid is for a one-host profile; "
                        "end a stranger on a node with that node's own tools")
    nodes = for_nodes(profile, grace=args.grace)
    results = nodes.stop(_progress(sys.stderr))
    w = clitext.Writer(sys.stdout)
    for result in results:
        for line in result.lines():
            w.line(line)
    unreached = [r.node for r in results if r.command is not None and not r.command.ok or r.error is not None]
    if unreached:
        clitext.print_error(f"not every node was stopped ({', '.join(unreached)}): see the lines above; "
                            "check the node is reachable, then run symmtui stop again")
        return EXIT_UNREACHED
    if any(r.report is not None and r.report.survivors for r in results):
        return EXIT_SURVIVOR
    return 0
