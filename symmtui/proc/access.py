"""Why py-spy may not read a process (ptrace refused), said in one line with what to do."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from msgspec import Struct

CAP_SYS_PTRACE = 19
YAMA = Path("/proc/sys/kernel/yama/ptrace_scope")


class Access(Struct, frozen=True):
    """What decides ptrace permission here: our capabilities, Yama's scope, the target's owner."""

    has_ptrace_cap: bool
    bounding_has_ptrace: bool
    yama_scope: int | None
    euid: int


def _status_field(pid: int | str, name: str) -> str | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None


def _caps(pid: int | str, name: str) -> int | None:
    value = _status_field(pid, name)
    try:
        return int(value, 16) if value is not None else None
    except ValueError:
        return None


def current() -> Access:
    """This process's side of the check."""
    eff = _caps("self", "CapEff") or 0
    bnd = _caps("self", "CapBnd")
    try:
        scope: int | None = int(YAMA.read_text().strip())
    except (OSError, ValueError):
        scope = None
    return Access(bool(eff >> CAP_SYS_PTRACE & 1), bnd is None or bool(bnd >> CAP_SYS_PTRACE & 1), scope,
                  os.geteuid())


def _owner(pid: int) -> int | None:
    value = _status_field(pid, "Uid")
    try:
        return int(value.split()[1]) if value else None  # real, effective, saved, fs: the effective one
    except (ValueError, IndexError):
        return None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def explain(pid: int, access: Access | None = None) -> str:
    """One line: why ptrace of ``pid`` was refused and what to do about it."""
    a = access if access is not None else current()
    if a.yama_scope is not None and a.yama_scope >= 3:
        return ("kernel.yama.ptrace_scope is 3 on this host: no process may be traced until reboot, "
                "so no stacks can be read; set it to 1 in /etc/sysctl.d and reboot to use symmtui stacks")
    owner = _owner(pid)
    if owner is not None and owner != a.euid and not a.has_ptrace_cap:
        return (f"pid {pid} belongs to user {_user(owner)}, not to {_user(a.euid)}: run symmtui stacks as "
                f"{_user(owner)} or with sudo")
    if not a.has_ptrace_cap and not a.bounding_has_ptrace:
        return ("this process may not use ptrace: CAP_SYS_PTRACE is not in its capability bounding set "
                "(a container started without it): restart the container with --cap-add=SYS_PTRACE "
                "(docker/podman; securityContext.capabilities.add: [SYS_PTRACE] on Kubernetes) or run "
                "symmtui stacks on the host")
    if not a.has_ptrace_cap and a.yama_scope == 2:
        return ("kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may read other processes: run "
                "symmtui stacks with sudo (or, as root, sysctl kernel.yama.ptrace_scope=1)")
    if not a.has_ptrace_cap and a.yama_scope == 1:
        return ("kernel.yama.ptrace_scope is 1: a process may only trace its own children: run symmtui "
                "stacks with sudo (or, as root, sysctl kernel.yama.ptrace_scope=0)")
    target = _caps(pid, "CapEff")
    ours = _caps("self", "CapEff")
    if not a.has_ptrace_cap and target is not None and ours is not None and target & ~ours:
        return (f"pid {pid} holds capabilities this process lacks and CAP_SYS_PTRACE is missing: run symmtui "
                "stacks with sudo")
    return (f"pid {pid} refused ptrace (it may have called prctl(PR_SET_DUMPABLE, 0), or AppArmor/SELinux "
            "forbids tracing it): run symmtui stacks with sudo, or check the security profile")
