"""Run the dashboard over a Session: for a profile / log / URL (`symmtui`) or for the demo (`symmtui demo`)."""

from __future__ import annotations

import contextlib
import sys

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.ui.themes import DEFAULT_THEME, load_themes


def check_theme(name: str | None) -> str:
    """The theme to start with; an unknown name is a UserError listing the known ones."""
    themes = load_themes()
    chosen = name or DEFAULT_THEME
    if chosen not in themes:
        known = ", ".join(sorted(themes)) or "(none found)"
        raise UserError(f"unknown theme {boundary.shown(chosen)}; known themes: {known}")
    return chosen


def run_demo(speed: float, theme: str | None, story: str = "crash") -> int:
    """`symmtui demo`: build, run the app, and on quit stop the demo's servers and remove its temp dir."""
    from symmtui.session import open_demo
    from symmtui.ui.app import SymmApp

    chosen = check_theme(theme)
    boundary.require_terminal("the demo")  # before the demo server starts
    session, _demo = open_demo(speed, story)
    try:
        result = SymmApp(session, theme=chosen).run()
    finally:
        # The terminal may be gone (SIGHUP): the note is best effort, the cleanup is not.
        with contextlib.suppress(OSError):
            print("symmtui demo: stopping the demo server and removing its temp dir…", file=sys.stderr)
        session.close()
    return result or 0


def run_dashboard(config: str | None, log: str | None, url: str | None, theme: str | None,
                  auto_stacks: bool = True) -> int:
    """The no-verb dashboard."""
    from symmtui.session import open_dashboard
    from symmtui.ui.app import SymmApp

    chosen = check_theme(theme)
    session = open_dashboard(config, log, url)
    try:
        boundary.require_terminal("the dashboard")  # after the profile's and options' own errors
        result = SymmApp(session, theme=chosen, auto_stacks=auto_stacks).run()
    finally:
        session.close()
    return result or 0
