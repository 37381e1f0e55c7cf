"""Build a Session from a profile or an attach spec (log path / URL / pid): every front end starts here."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from symmtui.errors import UserError
from symmtui.session.core import Session
from symmtui.session.settings import bringup_settings

if TYPE_CHECKING:
    from symmtui.core.logcmd import LogCommand
    from symmtui.demo.story import Demo
    from symmtui.gpu.facts import PatchFacts
    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.source import GpuSource
    from symmtui.launch.profile import Profile
    from symmtui.session.patching import Patcher

ATTACH_TAIL_LINES = 5000  # the dashboard shows the last lines of a log at once and judges the rest behind


@dataclass(frozen=True)
class AttachSpec:
    """What to watch without a profile: a log, a /health URL, a pid, extra patterns and limits."""

    log: Path | None = None
    url: str | None = None
    pid: int | None = None
    ready: Sequence[str] = ()
    crash: Sequence[str] = ()
    timeout: float | None = None
    stall: float | None = None


def profile_name(profile: Profile) -> str:
    """How the dashboard's header names a profile: its file's stem, or ``dir/symmtui.toml``."""
    if profile.path is None:
        return "profile"
    if profile.path.name == "symmtui.toml":
        return f"{profile.path.parent.name}/symmtui.toml"
    return profile.path.stem


def python_of(argv: Sequence[str] | None) -> str | None:
    """The interpreter a launch command runs (to find the SGLang it imports), if it names one."""
    if not argv:
        return None
    return argv[0] if os.path.basename(argv[0]).startswith("python") else None


def _installed_patcher(session: Session, python: str | None, site: Path | None = None,
                       package: str | None = None) -> Patcher:
    """The patcher for the SGLang/vLLM that ``python`` (or this interpreter) imports, asking
    ``symmtui.gpu.facts`` with the session's NVML and topology (the same answer `symmtui patch` gets)."""
    from symmtui.session.patching import Patcher

    def facts() -> PatchFacts:
        from symmtui.gpu.facts import patch_facts  # with NVML: loaded when a check is asked for

        return patch_facts(session.nvml, session.topology)

    return Patcher(site=site, package=package, python=python, facts=facts)


def for_profile(
    profile: Profile,
    *,
    nvml: Nvml | None = None,
    timeout: float | None = None,
    stall: float | None = None,
    ready: Sequence[str] = (),
    crash: Sequence[str] = (),
    grace: float | None = None,
    gpu_timeout: float = 60.0,
    port_timeout: float = 30.0,
    name: str | None = None,
    gpus: GpuSource | None = None,
) -> Session:
    """A Session for a launch profile: its rules and limits, its supervisor, the port-owner lookup.

    ``nvml``: the GPUs to sample and ask "which pids hold memory" (None: not checked); ``gpus``: sample
    these instead (exporters: :func:`gpu_sources`), NVML still answering the pids. ``timeout``,
    ``stall``, ``ready``, ``crash``: the command line's, over the profile's (see ``bringup_settings``).
    """
    from symmtui.gpu.facts import gpu_pids_from
    from symmtui.launch import ports
    from symmtui.launch.supervisor import Supervisor

    if profile.url is not None:
        from symmtui.core.probe import check_url

        check_url(profile.url)
    settings = bringup_settings(profile, ready=ready, crash=crash, timeout=timeout, stall=stall)
    supervisor = Supervisor(profile, gpu_pids=gpu_pids_from(nvml) if nvml is not None else None, grace=grace,
                            gpu_timeout=gpu_timeout, port_timeout=port_timeout)
    supervisor.versions.nvml = nvml  # the driver's versions in the history too
    session = Session(host=_hostname(), name=name or profile_name(profile), settings=settings,
                      supervisor=supervisor, nvml=nvml, url=profile.url, port_owner=ports.port_owner, gpus=gpus)
    session.patcher = _installed_patcher(session, python_of(profile.argv))
    session.log_command = profile.log_cmd  # a launch's log is this command's output, not the launch's stdout
    return session


def _hostname() -> str:
    """What ``socket.gethostname()`` says on Linux (gethostname(2) is uname's nodename), without
    importing socket (~3 ms of every `wait` start)."""
    return os.uname().nodename


def for_attach(spec: AttachSpec, *, nvml: Nvml | None = None, name: str | None = None,
               gpus: GpuSource | None = None) -> Session:
    """A Session that only watches (no supervisor): a log and/or a URL and/or a pid."""
    if spec.url is not None:
        from symmtui.core.probe import check_url

        check_url(spec.url)
    settings = bringup_settings(ready=spec.ready, crash=spec.crash, timeout=spec.timeout, stall=spec.stall)
    shown = name or (f"attach {spec.log.name}" if spec.log is not None else "attach")
    session = Session(host=_hostname(), name=shown, settings=settings, nvml=nvml, url=spec.url, gpus=gpus)
    session.patcher = _installed_patcher(session, None)
    return session


def gpu_sources(specs: Sequence[str], nvml: Nvml) -> GpuSource | None:
    """What the dashboard samples for ``specs`` (``--gpus`` / ``server.gpus``): None for NVML alone (the
    Session samples ``nvml`` itself), else one source over them all (:func:`open_sources`)."""
    from symmtui.gpu.specs import NVML, open_sources

    if [s.strip().lower() for s in specs] in ([], [NVML]):
        return None
    return open_sources(tuple(specs), nvml=nvml)


def open_dashboard(config: str | None, log: str | None, url: str | None, *,
                   log_cmd: LogCommand | None = None, gpus: Sequence[str] = ()) -> Session:
    """`symmtui [--config FILE] [--log PATH | --log-cmd CMD] [--url URL] [--gpus SPEC]...`: the Session for
    a profile or an attach, following (a log command given here, or the profile's ``log_cmd``, instead of a
    file); its GPUs from ``gpus`` (else the profile's ``server.gpus``, else NVML)."""
    from symmtui.gpu.nvml import Nvml
    from symmtui.launch.history import History
    from symmtui.launch.profile import find_profile, load_profile

    profile = None
    given = log is not None or log_cmd is not None
    if config is not None or (not given and url is None and find_profile(None) is not None):
        profile = load_profile(config)
    if profile is None and not given and url is None:
        raise UserError(
            "nothing to watch: pass --log PATH (a server log), --log-cmd CMD (a command printing it), --url URL "
            "(its /health), or --config FILE (a launch profile; ./symmtui.toml is used when present); "
            "try `symmtui demo` first"
        )
    nvml = Nvml()
    source = gpu_sources(gpus or (profile.gpus if profile is not None else ()), nvml)
    if profile is None:
        name = f"attach `{log_cmd.text}`" if log_cmd is not None else None
        session = for_attach(AttachSpec(log=Path(log) if log is not None else None, url=url), nvml=nvml, name=name,
                             gpus=source)
        session.spool_log_commands = True  # the log pane reads old lines back from the command's copy
        session.follow(log_cmd or log, tail_lines=ATTACH_TAIL_LINES)
        return session
    if log is None and log_cmd is None and profile.log_cmd is not None:
        log_cmd = profile.log_cmd
    session = for_profile(profile, nvml=nvml, gpus=source)
    if url is not None:
        from symmtui.core.probe import check_url

        check_url(url)
        session.url = url
    sup = session.supervisor
    assert sup is not None
    record = sup.current()
    pid = None
    log_path = log
    recorded = False
    if record is not None and sup.is_alive(record):
        pid = record.pid
        log_path = log_path or record.log_path
        # its outcome may be in the history already (`symmtui launch` waited for it): not written
        # again, but still its record, so a stop we ask for (a relaunch) ends it as STOPPED
        recorded = History().has(record.launch_id)
    else:
        record = None
    if log_path is None and profile.log_path is not None:
        log_path = str(profile.log_path)
    session.spool_log_commands = True  # the log pane reads old lines back from the command's copy
    if log_cmd is not None and log is None:
        session.follow(log_cmd, pid=pid, record=record, recorded=recorded)
        return session
    session.follow(log_path, pid=pid, tail_lines=ATTACH_TAIL_LINES, record=record, recorded=recorded)
    return session


def open_demo(speed: float, story: str = "crash") -> tuple[Session, Demo]:
    """`symmtui demo`: temp dir, sandbox, stand-in NVML, the simulated server's first launch, followed.

    ``story``: "crash" (KeyError: 12, patch, relaunch) or "hang" (one rank stops in NCCL init, STALLED,
    the stacks panel names it, a relaunch recovers) or "fix" (DeepGEMM's KeyError: '120a'; the catalogue's
    env action applied to the demo's profile, a relaunch with it comes up).
    """
    from symmtui.demo.story import HOST_NAME, PROFILE_NAME, build_demo

    demo = build_demo(speed, story=story)
    try:
        settings = bringup_settings(demo.profile)
        session = Session(host=HOST_NAME, name=PROFILE_NAME, settings=settings, supervisor=demo.supervisor,
                          nvml=demo.nvml, url=demo.profile.url)
        session.patcher = _installed_patcher(session, None, demo.site, "sglang")
        session.on_close.append(demo.close)
        session.launch_unchecked()
    except BaseException:
        demo.close()
        raise
    return session, demo
