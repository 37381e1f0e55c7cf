"""Run the dashboard over a Session: for a profile / log / URL (`symmtui`) or for the demo (`symmtui demo`)."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.ui.themes import DEFAULT_THEME, load_themes

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App

    from symmtui.core.logcmd import LogCommand
    from symmtui.launch.profile import Profile
    from symmtui.notify.notifier import Notifier
    from symmtui.session import Session


def check_theme(name: str | None) -> str:
    """The theme to start with; an unknown name is a UserError listing the known ones."""
    themes = load_themes()
    chosen = name or DEFAULT_THEME
    if chosen not in themes:
        known = ", ".join(sorted(themes)) or "(none found)"
        raise UserError(f"unknown theme {boundary.shown(chosen)}; known themes: {known}")
    return chosen


def run_demo(speed: float, theme: str | None, story: str = "crash", record: bool = True, nodes: int = 1) -> int:
    """`symmtui demo`: build, run the app, and on quit stop the demo's servers and remove its temp dir."""
    from symmtui.bundle.wire import demo_bundle_path, record_demo
    from symmtui.session import open_demo
    from symmtui.ui.app import SymmApp

    chosen = check_theme(theme)
    boundary.require_terminal("the demo")  # before the demo server starts
    if nodes > 1:  # the 2-node story (no bundle recorded: the recorder follows one Session's launch)
        from symmtui.demo.nodes import open_demo_nodes

        nodes_demo = open_demo_nodes(speed)
        try:
            result = SymmApp(nodes_demo.nodes.head.session, theme=chosen, nodes=nodes_demo.nodes).run()
        finally:
            with contextlib.suppress(OSError):
                print("symmtui demo: stopping both nodes' servers and removing the temp dir…", file=sys.stderr)
            nodes_demo.close()
        return result or 0
    kept = demo_bundle_path(story) if record else None  # the user's state dir, before the demo isolates its own
    session, demo = open_demo(speed, story)
    recorder = record_demo(session, demo, kept) if kept is not None else None
    try:
        result = SymmApp(session, theme=chosen).run()
    finally:
        # The terminal may be gone (SIGHUP): the note is best effort, the cleanup is not.
        with contextlib.suppress(OSError):
            print("symmtui demo: stopping the demo server and removing its temp dir…", file=sys.stderr)
        session.close()
        if recorder is not None and recorder.path is not None:
            with contextlib.suppress(OSError):
                print(f"symmtui demo: bundle kept: {recorder.path} (symmtui replay / report)", file=sys.stderr)
    return result or 0


def run_dashboard(config: str | None, log: str | None, url: str | None, theme: str | None,
                  auto_stacks: bool = True, notify: bool = False, log_cmd: LogCommand | None = None,
                  metrics: tuple[int | None, str] = (None, "127.0.0.1"), record: bool = True,
                  gpus: tuple[str, ...] = (), bundle: str | None = None) -> int:
    """The no-verb dashboard; ``notify``: notify each verdict (also when the profile has [notify]);
    ``log_cmd``: read the log from this command (``--log-cmd``); ``metrics``: (port, host) of the
    Prometheus endpoint (port None: none); ``record``: record a bundle (to ``bundle``, else the store); ``gpus``: the
    GPU sources (``--gpus``: "nvml" or exporters' URLs; empty: the profile's, else NVML)."""
    from symmtui.bundle.wire import record_session, server_command
    from symmtui.session import open_dashboard
    from symmtui.ui.app import SymmApp
    from symmtui.verbs import metricsopts

    chosen = check_theme(theme)
    if log is None and log_cmd is None:
        from symmtui.session.nodes import nodes_profile

        several = nodes_profile(config)
        if several is not None:
            if gpus:
                raise UserError(f"{several.path} lists [[nodes]]: each node names its own gpus there; drop --gpus")
            return _run_nodes_dashboard(several, url, chosen, auto_stacks, metrics, notify, record, bundle)
    session = open_dashboard(config, log, url, log_cmd=log_cmd, gpus=gpus)
    notifier = None
    server = None
    profile = session.supervisor.profile if session.supervisor is not None else None
    try:
        boundary.require_terminal("the dashboard")  # after the profile's and options' own errors
        record_session(session, server_command(profile), enabled=record, dest=bundle, announce=sys.stderr)
        server = metricsopts.serve(session, *metrics)  # before the app attaches: it sees every message
        app = SymmApp(session, theme=chosen, auto_stacks=auto_stacks)
        notifier = _notifier(session, app, notify)
        result = app.run()
    finally:
        session.close()
        if server is not None:
            server.close()
        _finish_notifier(notifier)  # webhooks still in flight: a bounded wait, warnings on stderr now
    return result or 0


def _run_nodes_dashboard(profile: Profile, url: str | None, theme: str, auto_stacks: bool,
                         metrics: tuple[int | None, str] = (None, "127.0.0.1"), notify: bool = False,
                         record: bool = True, bundle: str | None = None) -> int:
    """The dashboard of a ``[[nodes]]`` profile: every node followed (its running launch, if any), the
    aggregate shown and notified (``notify``, or the profile's [notify]), GPU rows grouped by node, the
    metrics endpoint over every node when asked, one bundle per node (``record``)."""
    from symmtui.bundle.wire import record_nodes
    from symmtui.session.nodes import open_nodes
    from symmtui.ui.app import SymmApp
    from symmtui.verbs import metricsopts

    nodes = open_nodes(profile, url=url)
    server = None
    notifier = None
    try:
        boundary.require_terminal("the dashboard")
        record_nodes(nodes, enabled=record, dest=bundle)
        server = metricsopts.serve_nodes(nodes, *metrics)  # before the app attaches: it sees every message
        app = SymmApp(nodes.head.session, theme=theme, auto_stacks=auto_stacks, nodes=nodes)
        if notify or profile.notify is not None:
            from symmtui.notify.nodes import attach_nodes

            notifier = attach_nodes(nodes, profile.notify, bell=_app_bell(app))
        result = app.run()
    finally:
        nodes.close()
        if server is not None:
            server.close()
        _finish_notifier(notifier)
    return result or 0


def _finish_notifier(notifier: Notifier | None) -> None:
    """After the app quit: webhooks still in flight get a bounded wait, warnings on stderr now."""
    if notifier is not None:
        from symmtui import clitext

        notifier.warn = lambda text: clitext.note(f"warning: {text}", sys.stderr)
        notifier.finish()


def _app_bell(app: App[int]) -> Callable[[], str | None]:
    """Ring through the app's own screen (a BEL written past Textual could land inside one of its escape
    sequences)."""

    def bell() -> str | None:
        if not app.is_running:
            return "the dashboard has quit"
        try:
            app.call_from_thread(app.bell)
        except RuntimeError as exc:  # the app's loop ended meanwhile
            return str(exc)
        return None

    return bell


def _notifier(session: Session, app: App[int], asked: bool) -> Notifier | None:
    """A Notifier on the dashboard's Session when asked or the profile has [notify]; it rings through the
    app's own screen (a BEL written past Textual could land inside one of its escape sequences)."""
    sup = session.supervisor
    config = sup.profile.notify if sup is not None else None
    if not asked and config is None:
        return None
    from symmtui.notify.notifier import attach

    return attach(session, config, bell=_app_bell(app))
