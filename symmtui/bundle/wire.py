"""What the verbs call to record their Session into a bundle (`wait`, `launch`, the dashboard, the demo)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from symmtui.bundle.recorder import Recorder
from symmtui.launch.envinfo import EnvInfo, ServerCommand, capture

if TYPE_CHECKING:
    from symmtui.demo.story import Demo
    from symmtui.launch.profile import Profile
    from symmtui.session.core import Session
    from symmtui.session.nodes import NodeSet


def server_command(profile: Profile | None = None, pid: int | None = None) -> ServerCommand | None:
    """How the watched server runs: a profile's command, else what ``/proc/PID`` says, else unknown (None)."""
    if profile is not None and profile.argv is not None:
        return ServerCommand.from_profile(profile)
    if pid is not None:
        return ServerCommand.from_pid(pid)
    return None


def record_session(
    session: Session,
    command: ServerCommand | None,
    *,
    enabled: bool = True,
    dest: str | Path | None = None,
    err: TextIO | None = None,
    announce: TextIO | None = None,
) -> Recorder | None:
    """Observe ``session`` into a bundle (call before the front end attaches); its close writes the last one.

    ``dest``: a fixed file (``--bundle PATH``; the demo's, kept outside its temp dir); None: the store
    (``symmtui.bundle.store``). ``err``: where a failed write is said when the Session can no longer post
    it (on close); None: through the Session while it runs. ``announce``: where the bundle's path is
    printed when the run ends, under its verdict (``wait``, ``launch``).
    """
    if not enabled:
        if dest is not None:
            from symmtui.errors import UserError

            raise UserError("give --bundle PATH or --no-record, not both")
        return None

    def env() -> EnvInfo:
        # `wait` has no NVML (it samples no GPUs and keeps NVML, httpx and ssl out of its imports):
        # its bundle names no GPUs; launch, the dashboard and the demo name them
        return capture(command, nvml=session.nvml)

    def warn(text: str) -> None:
        if not session.closed:
            session.notify(text, "warning")
            return
        from symmtui import clitext

        clitext.note(f"warning: {text}", err if err is not None else sys.stderr)

    read_env: Callable[[], EnvInfo] = env
    if session.supervisor is not None and command is not None:
        # the next launch reads its history versions from this same capture: one probe of the interpreter
        read_env = session.supervisor.versions.session_capture(env, command).get
    rec = Recorder(name=session.name, host=session.host, command=command, nvml=session.nvml,
                   ruleset=session.settings.ruleset, dest=None if dest is None else Path(dest), warn=warn, env=read_env)
    session.observe(rec.observe)

    def close() -> None:
        rec.close()
        if announce is not None and rec.path is not None:
            from symmtui import clitext

            clitext.note(clitext.bundle_line(str(rec.path)), announce)

    session.on_close.append(close)
    rec.start()
    return rec


def record_nodes(nodes: NodeSet, *, enabled: bool = True, err: TextIO | None = None,
                 dest: str | None = None) -> list[Recorder]:
    """Record each node of a ``[[nodes]]`` profile into its own bundle in the store, named after that node's
    log (a node read through ``log_cmd`` has none: after the node). Call before the front end attaches.

    A node's command is usually ``ssh nodeN ...``: the server's interpreter is on the other host, so the
    environment names symmtui's side only (versions it cannot read are listed in the bundle's notes)."""
    if dest is not None:
        from symmtui.errors import UserError

        raise UserError("--bundle PATH names one file: a [[nodes]] profile records one bundle per node "
                        "(in $XDG_STATE_HOME/symmtui/bundles/)")
    recorders = [record_session(node.session, None, enabled=enabled, err=err) for node in nodes.nodes]
    return [rec for rec in recorders if rec is not None]


def demo_bundle_path(story: str) -> Path:
    """Where the demo keeps its bundle: the user's state dir (its own temp dir is removed on quit)."""
    from symmtui.bundle.format import SUFFIX
    from symmtui.bundle.store import store_dir

    return store_dir() / f"demo-{story}{SUFFIX}"


def record_demo(session: Session, demo: Demo, dest: Path) -> Recorder | None:
    """Record the demo's Session into ``dest`` (call before the app attaches)."""
    return record_session(session, ServerCommand.from_profile(demo.profile), dest=dest)
