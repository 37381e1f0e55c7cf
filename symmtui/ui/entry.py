"""Run the dashboard over a Session: for a profile / log / URL (`symmtui`) or for the demo (`symmtui demo`)."""

from __future__ import annotations

import contextlib
import gc
import io
import os
import signal
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App

from symmtui import boundary
from symmtui.build import dashboard_spec, demo_spec, open_demo, open_session
from symmtui.errors import UserError
from symmtui.logs.logcmd import LogCommand
from symmtui.ui.app import SymmApp, end_job_control
from symmtui.ui.themes import DEFAULT_THEME, load_themes
from symmtui.ui.widgets.log_file import index_ahead


def run_app(app: App[Any], **run: Any) -> Any:
    """Run a Textual app as a verb does: an unexpected exception in it (Textual renders its traceback at exit, and
    its exit status used to be 0) and one in a worker thread (the dashboard exits) end the verb with one line and
    exit 2, the traceback in a crash file of the state dir (``boundary.internal_error``). ``run``: App.run's."""
    captured = io.StringIO()
    if not os.environ.get(boundary.DEBUG_ENV):  # debugging: Textual's own traceback on the terminal, as it was
        app.error_console = Console(file=captured, width=120, color_system=None, markup=False, highlight=False)
    with boundary.ending_on_internal_errors(lambda: app.call_later(app.exit, None, 2)):
        try:
            if boundary.owns_process():
                # What start-up made (modules, the Session; ~100k objects) lives as long as the process: moved out
                # of the collector's reach, each full collection walks only what the dashboard makes since. During
                # a 50k lines/s flood they came about twice a second and took 40-110 ms; a key waited for them.
                gc.freeze()
            boundary.hold_for_app()  # SIGTERM / SIGHUP until the app has its handlers (SymmApp.on_mount)
            result = app.run(**run)
        finally:
            boundary.started()  # again after the first frame (idempotent), or for an app that ended before it
            end_job_control()  # also for an app that ended before it unmounted
            came = boundary.app_has_signals()  # the app ended before it took them: one that came acts now
            if came:
                signal.raise_signal(came)
    if app.return_code not in (None, 0, 2):  # 1: Textual caught an exception (2: a thread's, already recorded)
        details = captured.getvalue()
        last = [ln.strip() for ln in details.splitlines() if ln.strip() and not ln.startswith((" ", "│", "╰", "╭"))]
        boundary.internal_error(f"in the dashboard: {last[-1][:300] if last else 'an exception'}", details)
    return result


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
    chosen = check_theme(theme)
    boundary.require_terminal("the demo")  # before the demo server starts
    session = None
    try:
        with boundary.signals_held():  # SIGTERM / SIGHUP while the temp dir and servers are made: acted on after
            spec, demo = demo_spec(speed, story, nodes=nodes, record_bundle=record)
            session = open_demo(spec, demo)
        result = run_app(SymmApp(session, theme=chosen))
    finally:
        if session is not None:
            # The terminal may be gone (SIGHUP before the app took the signals over): the notes are best effort,
            # the cleanup is not. A write to a closed terminal fails with EIO, which the guarded stderr turns into
            # a UserError ("cannot write to standard error"): it skipped session.close(), and left the temp dir.
            try:
                _best_effort("symmtui demo: stopping the demo's servers and removing its temp dir…")
            finally:
                session.close()
            if spec.record is not None and spec.record.dest is not None and spec.record.dest.exists():
                _best_effort(f"symmtui demo: bundle kept: {spec.record.dest} (symmtui replay / report)")
    return result or 0


def _best_effort(note: str) -> None:
    """A line on stderr that may not get there (the terminal is gone): never an error."""
    with contextlib.suppress(OSError, UserError):
        print(note, file=sys.stderr)


def run_dashboard(config: str | None, log: str | None, url: str | None, theme: str | None,
                  auto_stacks: bool = True, notify: bool = False, log_cmd: LogCommand | None = None,
                  metrics: tuple[int | None, str] = (None, "127.0.0.1"), record: bool = True,
                  gpus: tuple[str, ...] = (), bundle: str | None = None) -> int:
    """The no-verb dashboard; ``notify``: notify each verdict (also when the profile has [notify]);
    ``log_cmd``: read the log from this command (``--log-cmd``); ``metrics``: (port, host) of the
    Prometheus endpoint (port None: none); ``record``: record a bundle (to ``bundle``, else the store); ``gpus``: the
    GPU sources (``--gpus``: "nvml" or exporters' URLs; empty: the profile's, else NVML)."""
    chosen = check_theme(theme)
    spec = dashboard_spec(config, log, url, log_cmd=log_cmd, gpus=gpus, auto_stacks=auto_stacks, notify=notify,
                          metrics_port=metrics[0], metrics_host=metrics[1], record_bundle=record,
                          bundle=bundle)
    boundary.require_terminal("the dashboard")  # after the profile's and options' own errors
    for plan in spec.nodes:  # the log's end indexed while Textual starts: the pane's first frame has its rows
        if isinstance(plan.source, Path):
            index_ahead(plan.source)
    session = None
    try:
        with boundary.signals_held():  # SIGTERM / SIGHUP while its log command starts: acted on after
            session = open_session(spec)
        result = run_app(SymmApp(session, theme=chosen))
    finally:
        if session is not None:
            session.close()  # webhooks still in flight: a bounded wait, warnings on stderr now
    return result or 0
