"""Notifications on this machine: the terminal bell, a tmux message (and the window's bell flag), a desktop
notification. Each is skipped without a word where it does not exist (no terminal, not in tmux, no desktop)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

from symmtui.notify.message import VerdictNote

COMMAND_TIMEOUT = 2.0
"""Seconds a `tmux` or `notify-send` call may take before it is given up (a hung D-Bus, a dead server)."""
URGENCY = {"ready": "normal", "stalled": "normal", "crashed": "critical", "timed_out": "critical"}


def ring_terminal() -> str | None:
    """Write BEL to the controlling terminal (``/dev/tty``, whatever stdout is redirected to): the terminal
    rings, and inside tmux the window gets its bell flag (seen over SSH too). None when rung, else why not."""
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:  # no controlling terminal (cron, CI, a service): nothing to ring
        return f"no terminal ({exc.strerror})"
    try:
        os.write(fd, b"\a")
    except OSError as exc:
        return f"cannot write to the terminal ({exc.strerror})"
    finally:
        os.close(fd)
    return None


def tmux_escape(text: str) -> str:
    """tmux expands ``#{...}`` / ``#(...)`` formats in display-message: ``#`` is written ``##``."""
    return text.replace("#", "##")


def tmux_message(note: VerdictNote, env: Mapping[str, str]) -> str | None:
    """``tmux display-message`` in the pane we run in (only when ``$TMUX`` is set). None when shown (or not in
    tmux), else one line why not."""
    if not env.get("TMUX"):
        return None
    tmux = shutil.which("tmux", path=env.get("PATH"))
    if tmux is None:
        return "$TMUX is set but no tmux command is on PATH"
    argv = [tmux, "display-message"]
    if env.get("TMUX_PANE"):
        argv += ["-t", env["TMUX_PANE"]]
    argv += ["--", tmux_escape(f"symmtui: {note.headline} ({note.name})")]
    return _run(argv, env, "tmux display-message")


def has_desktop(env: Mapping[str, str]) -> bool:
    """A graphical session with a D-Bus session bus (what notify-send needs)."""
    return bool((env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")) and env.get("DBUS_SESSION_BUS_ADDRESS"))


def desktop_notification(note: VerdictNote, env: Mapping[str, str]) -> str | None:
    """``notify-send`` where a desktop exists (else nothing, no error). None when sent, else why not."""
    if not has_desktop(env):
        return None
    send = shutil.which("notify-send", path=env.get("PATH"))
    if send is None:
        return None  # a desktop without libnotify's tool: the bell and tmux still tell
    argv = [send, "--app-name=symmtui", f"--urgency={URGENCY[note.verdict]}", "--", note.title, note.text]
    return _run(argv, env, "notify-send")


def _run(argv: list[str], env: Mapping[str, str], what: str) -> str | None:
    try:
        done = subprocess.run(argv, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,  # noqa: S603
                              timeout=COMMAND_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return f"{what} did not finish within {COMMAND_TIMEOUT:g} s"
    except OSError as exc:
        return f"{what} could not run ({exc.strerror})"
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    if err and err[-1] == "no current client":
        return None  # a detached tmux session: nobody to show it to; the window's bell flag still tells
    if done.returncode != 0:
        return f"{what} failed ({err[-1] if err else f'exit {done.returncode}'})"
    return None
