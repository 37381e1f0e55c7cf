"""The recorder plug-in: a bundle per node of a Session (``spec.record``), and where the demo keeps its bundle."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from symmtui import clitext, paths
from symmtui.bundle.recorder import Recorder
from symmtui.bundle.store import prune, reserve
from symmtui.launch.envinfo import EnvInfo, ServerCommand, capture
from symmtui.launch.profile import Profile
from symmtui.session.core import Session
from symmtui.session.messages import EngineBatch, SessionMessage, StacksTaken
from symmtui.session.spec import Record


def server_command(profile: Profile | None = None, pid: int | None = None) -> ServerCommand | None:
    """How the watched server runs: a profile's command, else what ``/proc/PID`` says, else unknown (None)."""
    if profile is not None and profile.argv is not None:
        return ServerCommand.from_profile(profile)
    if pid is not None:
        return ServerCommand.from_pid(pid)
    return None


def _only(node: str, head: bool, observe: Callable[[SessionMessage], None]) -> Callable[[SessionMessage], None]:
    """``observe`` for one node's recorder: its node's batches and dumps; the head's also hears the rest
    (GPU rounds, the topology, notices)."""

    def hear(message: SessionMessage) -> None:
        if isinstance(message, EngineBatch | StacksTaken):
            if message.node == node:
                observe(message)
        elif head:
            observe(message)

    return hear


def _warn(session: Session, text: str) -> None:
    if session.closed:  # nobody takes a Session's notices any more: say it on stderr
        clitext.note(f"warning: {text}", sys.stderr)
    else:
        session.notify(text, "warning")


def _close(rec: Recorder, announce: bool) -> None:
    rec.close()
    if announce and rec.path is not None:
        clitext.note(clitext.bundle_line(str(rec.path)), sys.stderr)


def record(session: Session, spec: Record) -> list[Recorder]:
    """Record each node of ``session`` into its own bundle in the store (``symmtui.bundle.store``: named
    after that node's log, or the node where it has none) or, for the head, ``spec.dest`` (``--bundle PATH``;
    the demo's, kept outside its temp dir); each recorder writes at its node's verdicts and a last time on
    close, and with ``spec.announce`` says where on stderr once the Session has closed (under the verdict).
    A failed write is a warning through the Session, or on stderr once it has closed.

    A node's command is usually ``ssh nodeN ...``: its interpreter is on another host, so its environment
    names symmtui's side only (the versions it cannot read are listed in the bundle's notes)."""
    recorders = []
    nvml = session.nvml
    head = None if session.named else server_command(session.spec.profile, spec.pid)
    for i, name in enumerate(session.nodes):
        command = head if i == 0 else None

        def env(command: ServerCommand | None = command) -> EnvInfo:
            # `wait` has no NVML (it samples no GPUs and keeps NVML, httpx and ssl out of its imports):
            # its bundle names no GPUs; launch, the dashboard and the demo name them
            return capture(command, nvml=nvml)

        rec = Recorder(name=session.name, host=name if session.named else session.host, command=command,
                       nvml=nvml, ruleset=session.spec.settings.ruleset, dest=spec.dest if i == 0 else None,
                       warn=partial(_warn, session), env=session.shared_capture(env, command) if i == 0 else env)
        session.observe(_only(name, i == 0, rec.observe), name=f"bundle-{name}")
        session.on_close(partial(_close, rec, spec.announce))
        rec.start()
        recorders.append(rec)
    return recorders


def demo_bundle_path(story: str) -> Path:
    """Where this demo run keeps its bundle: a name of its own in the user's state dir (one bundle per run;
    the demo's temp dir is removed on quit), reserved now; the store keeps the last runs of each story."""
    folder = paths.user_state_dir("bundles")  # the same folder as the store's (store_dir), whatever the demo isolated
    path = reserve(f"demo-{story}", time.time(), folder)
    prune(folder, keep=path)
    return path
