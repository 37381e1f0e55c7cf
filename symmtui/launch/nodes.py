"""The nodes of a multi-node profile: each node's own launch profile, and its stop command run and judged."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from symmtui.launch.profile import NodeSpec, Profile

STOP_SLACK = 15.0  # a stop command gets the profile's grace plus this long before it is called unreachable
REASON_CHARS = 200


def node_profile(profile: Profile, node: NodeSpec) -> Profile:
    """The profile of one node: its launch command (if any) as the command, its own log dir and state file.

    The node's launch runs here (``ssh node1 ...`` is a local process whose output is the remote server's);
    its state file is keyed by the profile and the node's name, so each node's launch is stopped on its own.
    ``url`` is left out: the head's /health is probed by the node set, and a remote port is not ours to wait for.
    """
    base = profile.path if profile.path is not None else Path("symmtui.toml")
    log_dir = profile.log_dir / node.name if profile.log_dir is not None and node.launch is not None else None
    return replace(
        profile,
        path=Path(f"{base}#{node.name}"),
        argv=node.launch,
        command_text=node.launch_text,
        log_dir=log_dir,
        log=node.log if node.launch is None else None,
        url=None,
        nodes=(),
    )


def watched_log(profile: Profile, node: NodeSpec) -> Path | None:
    """The file the node's engine follows: its ``log``, else its launch's own log (``latest.log``)."""
    if node.log is not None:
        return node.log
    return node_profile(profile, node).log_path


class StopCommandResult(Struct, frozen=True):
    """What a node's ``stop`` command did: ``ok``, its exit code, and the reason in one line when not."""

    node: str
    ok: bool
    returncode: int | None
    reason: str

    def line(self) -> str:
        """One line naming the node: what stopped it, or why it could not be reached."""
        if self.ok:
            return f"{self.node}: stop command done"
        return f"{self.node}: not stopped: {self.reason}"


def run_stop_command(profile: Profile, node: str, argv: tuple[str, ...], text: str,
                     timeout: float | None = None) -> StopCommandResult:
    """Run node ``node``'s stop command ``argv`` (blocking, at most ``timeout`` s) in the profile's directory
    and environment; any failure is a result naming why, never silent."""
    limit = timeout if timeout is not None else profile.grace + STOP_SLACK
    env = {**os.environ, **profile.env}
    try:
        done = subprocess.run(  # noqa: S603 - the profile's own command, argv (a shell only if it asks)
            argv, cwd=profile.cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=limit,
            check=False, start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return StopCommandResult(node, False, None, f"stop command did not finish in {limit:.0f} s "
                                 f"({text}); is the node reachable?")
    except OSError as exc:
        return StopCommandResult(node, False, None, f"stop command could not start ({exc.strerror}): {text}")
    if done.returncode == 0:
        return StopCommandResult(node, True, 0, "")
    said = _last_line(done.stderr) or _last_line(done.stdout) or "no output"
    return StopCommandResult(node, False, done.returncode, f"stop command exited {done.returncode}: {said}")


def _last_line(data: bytes) -> str:
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    text = lines[-1] if lines else ""
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"
