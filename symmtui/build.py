"""The one builder: options or a profile -> a frozen ``SessionSpec`` -> a Session with its plug-ins.

Every front end starts here: ``wait_spec``, ``launch_spec``, ``stop_spec``, ``stacks_spec``,
``dashboard_spec`` and ``demo_spec`` check the options (one line for what is wrong, before anything
starts) and say what the Session is; :func:`open_session` builds it, attaches the plug-ins the spec names
(the bundle recorder, the notifier, the metrics endpoint), starts it and makes the spec's first launch.
It sits above ``session``, ``bundle`` and ``notify`` because it wires them together.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.paths import user_state_dir
from symmtui.session.core import Session
from symmtui.session.intents import Launch
from symmtui.session.settings import bringup_settings
from symmtui.session.spec import GpuPlan, Metrics, NodePlan, Notify, PatchTarget, Record, SessionSpec

# `wait --log` starts without what it does not use (tests/core/test_wait_cli.py; python -m bench.startup):
# the prober (httpx, ssl), the demo (the patch engine), the plug-ins (the recorder, the notifier,
# prometheus_client), NVML and the GPU sources (psutil), the profile and its launcher's state are
# imported where a spec names them.
if TYPE_CHECKING:
    from symmtui.demo.nodes import NodesDemo
    from symmtui.demo.story import Demo
    from symmtui.gpu.nvml import Nvml
    from symmtui.launch.profile import Profile
    from symmtui.launch.state import LaunchRecord
    from symmtui.logs.logcmd import LogCommand



class Limits(Struct, frozen=True):
    """The command line's rules and limits (over the profile's; see ``session.settings``)."""

    ready: Sequence[str] = ()
    crash: Sequence[str] = ()
    timeout: float | None = None
    stall: float | None = None


def hostname() -> str:
    """What ``socket.gethostname()`` says on Linux (gethostname(2) is uname's nodename), without
    importing socket (~3 ms of every `wait` start)."""
    return os.uname().nodename


def profile_name(profile: Profile) -> str:
    """How a profile is named (the header, notifications, metrics): its file's stem, or ``dir/symmtui.toml``."""
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


def running(profile: Profile) -> LaunchRecord | None:
    """The profile's recorded launch when it still runs (its pid, log and history entry), else None."""
    from symmtui.launch import state
    from symmtui.launch.supervisor import Supervisor  # the launcher: a profile's session only

    record = state.load(profile.key)
    return record if record is not None and Supervisor(profile).is_alive(record) else None


def _url(url: str | None) -> str | None:
    """``url``, checked (a malformed one is a UserError); the prober (httpx) loads only for a URL."""
    if url is not None:
        # an HTTP probe's check (httpx, ~50 ms): only a spec with --url pays it
        from symmtui.bringup.probe import check_url

        check_url(url)
    return url


def _nodes(profile: Profile, *, url: str | None, follow: bool, new_only: bool = False,
           tail_lines: int | None = None) -> tuple[NodePlan, ...]:
    """A ``[[nodes]]`` profile's nodes: each its log (file or ``log_cmd``), its launch (a Supervisor of its
    own: ``launch.nodes.node_profile``) and stop command; the head probes the URL."""
    # a profile's nodes: only a spec with a profile
    from symmtui.launch.nodes import node_profile, watched_log

    plans = []
    for spec in profile.nodes:
        source: Path | LogCommand | None
        if spec.log_cmd is not None:
            from symmtui.logs.logcmd import LogCommand  # subprocess, pipes: a node read through a command

            source = LogCommand(spec.log_cmd, spec.log_cmd_text, profile.shell)
            source.check()
        else:
            source = watched_log(profile, spec)
        nprof = node_profile(profile, spec) if spec.launch is not None else None
        record = running(nprof) if nprof is not None and follow else None
        plans.append(NodePlan(
            spec.name, source, url=url if spec.rank == 0 else None, pid=record.pid if record is not None else None,
            profile=nprof, follow=follow, follows_launch=spec.log is None and spec.log_cmd is None,
            new_only=new_only and spec.log_cmd is None, tail_lines=tail_lines if spec.log_cmd is None else None,
            record=record, remote=True, stop=spec.stop, stop_text=spec.stop_text))
    return tuple(plans)


def _profile_spec(profile: Profile, nodes: tuple[NodePlan, ...], limits: Limits, **kw: object) -> SessionSpec:
    """The spec of a profile's session: its rules and limits, the port owner, the SM120 patch's install."""
    settings = bringup_settings(profile, ready=limits.ready, crash=limits.crash, timeout=limits.timeout,
                                stall=limits.stall)
    patch = PatchTarget(python=python_of(profile.argv)) if not profile.nodes else None
    return SessionSpec(profile_name(profile), hostname(), nodes, settings, profile=profile,
                       port_owner=not profile.nodes, patch=patch, **kw)  # type: ignore[arg-type]


def _notify(profile: Profile | None, asked: bool, *, on_screen: bool = False) -> Notify | None:
    config = profile.notify if profile is not None else None
    return Notify(config, on_screen) if asked or config is not None else None


def _record(enabled: bool, bundle: str | Path | None, *, several: bool = False, pid: int | None = None,
            announce: bool = True) -> Record | None:
    """The recorder plug-in the options ask for: a bundle per node in the store, the head's in ``bundle``
    (``--bundle PATH``) when given; None with ``--no-record``."""
    if bundle is not None and not enabled:
        raise UserError("give --bundle PATH or --no-record, not both")
    if bundle is not None and several:
        raise UserError("--bundle PATH names one file: a [[nodes]] profile records one bundle per node "
                        "(in $XDG_STATE_HOME/symmtui/bundles/)")
    if bundle is not None and Path(bundle).is_dir():  # before anything starts (it warned twice at the end)
        raise UserError(f"--bundle {boundary.shown(str(bundle))} is a directory; give the bundle's file name "
                        "(or leave --bundle out: bundles go to $XDG_STATE_HOME/symmtui/bundles/)")
    if bundle is not None and not Path(bundle).resolve().parent.is_dir():
        raise UserError(f"--bundle {boundary.shown(str(bundle))}: no directory {boundary.shown(str(Path(bundle).parent))} "
                        "to write it in; create it or name another path")
    return Record(dest=Path(bundle) if bundle is not None else None, pid=pid, announce=announce) if enabled else None


def _metrics(port: int | None, host: str, linger: float = 0.0) -> Metrics | None:
    return Metrics(port, host, linger) if port is not None else None


def watch_spec(source: Path | LogCommand | None = None, *, url: str | None = None, pid: int | None = None,
               name: str | None = None, limits: Limits = Limits(), new_only: bool = False,
               tail_lines: int | None = None, **kw: object) -> SessionSpec:
    """A Session that only watches (no profile): a log (file or command) and/or a URL and/or a pid."""
    settings = bringup_settings(ready=limits.ready, crash=limits.crash, timeout=limits.timeout, stall=limits.stall)
    node = NodePlan(hostname(), source, url=_url(url), pid=pid, new_only=new_only, tail_lines=tail_lines)
    if name is None:
        name = f"attach {source.name}" if isinstance(source, Path) else "attach"
    return SessionSpec(name, hostname(), (node,), settings, **kw)  # type: ignore[arg-type]


# ---- the verbs ---------------------------------------------------------------------------------

def wait_spec(*, log: Path | None, log_cmd: LogCommand | None, url: str | None, pid: int | None,
              config: str | None, limits: Limits, new_only: bool, stacks: bool, notify: bool,
              record_bundle: bool, metrics_port: int | None, metrics_host: str, metrics_linger: float,
              bundle: str | Path | None = None) -> SessionSpec:
    """`symmtui wait`: follow a log (file or command), a URL, a pid, or a profile's (every node's) log."""
    profile = None
    if config is not None:
        # a profile (tomllib, ~10 ms): only a spec that names one
        from symmtui.launch.profile import load_profile

        profile = load_profile(config)
    plug: dict[str, Any] = {"notify": _notify(profile, notify),
                            "metrics": _metrics(metrics_port, metrics_host, metrics_linger)}
    if profile is not None and profile.nodes:
        if log is not None or pid is not None or log_cmd is not None:
            raise UserError(f"{profile.path} lists [[nodes]]: each node names its own log; "
                            "drop --log/--log-cmd/--pid (or watch one node with symmtui wait --log FILE)")
        nodes = _nodes(profile, url=_url(url if url is not None else profile.url), follow=True, new_only=new_only)
        return _profile_spec(profile, nodes, limits, record=_record(record_bundle, bundle, several=True), **plug)
    if profile is not None and log is None and log_cmd is None:
        log_cmd = profile.log_cmd
        log = profile.log_path if log_cmd is None else None
    url = url if url is not None or profile is None else profile.url
    if log is None and log_cmd is None and url is None:
        raise UserError("nothing to watch: give --log PATH, --log-cmd CMD and/or --url URL "
                        "(or --config FILE with a log, log_cmd or url)")
    if log_cmd is not None:
        log_cmd.check()
    if log is not None:
        boundary.regular_file(log, what="--log", missing_ok=True, hint="give the server's log file (it may not exist yet)")
    source: Path | LogCommand | None = log_cmd if log_cmd is not None else log
    rec = _record(record_bundle, bundle, pid=pid)
    stacks_gpus = stacks and (pid is not None or profile is not None)
    if profile is not None:
        node = NodePlan(hostname(), source, url=_url(url), pid=pid, profile=profile, new_only=new_only)
        return _profile_spec(profile, (node,), limits, record=rec, stacks_gpus=stacks_gpus,
                             auto_stacks=stacks_gpus, **plug)
    return watch_spec(source, url=url, pid=pid, limits=limits, new_only=new_only, record=rec,
                      stacks_gpus=stacks_gpus, auto_stacks=stacks_gpus, **plug)


def launch_spec(profile: Profile, *, limits: Limits, grace: float | None, notify: bool,
                record_bundle: bool, bundle: str | Path | None = None, stacks: bool = True) -> SessionSpec:
    """`symmtui launch`: the profile's server (every node's), launched by the verb itself (nothing followed first)."""
    if profile.attach_only and not profile.nodes:
        raise UserError(f"cannot launch: {profile.attach_reason}")
    if profile.nodes:
        nodes = _nodes(profile, url=_url(profile.url), follow=False)
        return _profile_spec(profile, nodes, limits, grace=grace, notify=_notify(profile, notify),
                             record=_record(record_bundle, bundle, several=True))

    node = NodePlan(hostname(), profile.log_cmd, url=_url(profile.url), profile=profile, follow=False)
    # the launcher waits for the GPUs' memory (NVML where the host has one)
    return _profile_spec(profile, (node,), limits, gpus=GpuPlan(nvml="if-present"), grace=grace,
                         notify=_notify(profile, notify),
                         record=_record(record_bundle, bundle), auto_stacks=stacks, stacks_gpus=stacks)


def stop_spec(profile: Profile, *, grace: float | None, gpu_timeout: float, port_timeout: float,
              kill_pid: int | None) -> SessionSpec:
    """`symmtui stop`: every node's stop command and local launch (nothing followed)."""
    if profile.nodes:
        if kill_pid is not None:
            raise UserError(f"{profile.path} lists [[nodes]]: --kill-pid is for a one-host profile; "
                            "end a stranger on a node with that node's own tools")
        return _profile_spec(profile, _nodes(profile, url=None, follow=False), Limits(), grace=grace)

    node = NodePlan(hostname(), None, url=profile.url, profile=profile, follow=False)
    # the stop waits for the GPUs' memory (NVML where the host has one)
    return _profile_spec(profile, (node,), Limits(), gpus=GpuPlan(nvml="if-present"), grace=grace,
                         gpu_timeout=gpu_timeout,
                         port_timeout=port_timeout)


def stacks_spec(*, config: str | None, pid: int | None, log: Path | None) -> SessionSpec:
    """`symmtui stacks`: a profile's running launch (its tree) or a pid's tree; nothing followed."""
    if log is not None:
        boundary.regular_file(log, what="--log", missing_ok=True, hint="give the server's log file")
    if pid is not None:
        node = NodePlan(hostname(), log, pid=pid, follow=False)
        return SessionSpec(f"pid {pid}", hostname(), (node,), bringup_settings())
    from symmtui.launch import state  # the launcher's state, a profile: only the stacks verb's spec
    from symmtui.launch.profile import load_profile

    profile = load_profile(config)
    record = state.load(profile.key)
    if record is None:
        raise UserError("this profile has no running launch recorded: start it with symmtui launch, or "
                        "give --pid PID of the server's main process")
    node = NodePlan(hostname(), log if log is not None else Path(record.log_path), profile=profile, follow=False,
                    record=record)
    return _profile_spec(profile, (node,), Limits())


# ---- the dashboard and the demo ----------------------------------------------------------------

def dashboard_spec(config: str | None, log: str | None, url: str | None, *, log_cmd: LogCommand | None = None,
                   gpus: Sequence[str] = (), auto_stacks: bool = True, notify: bool = False,
                   metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
                   record_bundle: bool = True, bundle: str | Path | None = None) -> SessionSpec:
    """`symmtui [--config FILE] [--log PATH | --log-cmd CMD] [--url URL] [--gpus SPEC]...`: a profile's
    server (its running launch, or its log; every node of a ``[[nodes]]`` profile), or an attach,
    followed from the last lines; its GPUs from ``gpus`` (else the profile's ``server.gpus``, else NVML)."""
    from symmtui.gpu.specs import NVML  # the GPU specs and a profile: only the dashboard's spec
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
    kw: dict[str, Any] = {"sample_gpus": True, "auto_stacks": auto_stacks, "spool_log_commands": True,
          "notify": _notify(profile, notify, on_screen=True), "metrics": _metrics(metrics_port, metrics_host)}
    if profile is not None and profile.nodes and not given:
        if gpus:
            raise UserError(f"{profile.path} lists [[nodes]]: each node names its own gpus there; drop --gpus")
        plan = GpuPlan(nvml="always" if any(n.gpus == NVML for n in profile.nodes) else "", per_node=True)
        nodes = _nodes(profile, url=_url(url if url is not None else profile.url), follow=True)
        return _profile_spec(profile, nodes, Limits(), gpus=plan,
                             record=_record(record_bundle, bundle, several=True), **kw)
    plan = GpuPlan(nvml="always", sources=tuple(gpus or (profile.gpus if profile is not None else ())))
    if profile is None:
        followed: Path | LogCommand | None = log_cmd if log_cmd is not None else Path(log) if log else None
        return watch_spec(followed, url=url, name=f"attach `{log_cmd.text}`" if log_cmd is not None else None,
                          gpus=plan, patch=PatchTarget(), record=_record(record_bundle, bundle), **kw)
    record = running(profile)
    if log_cmd is None and log is None:
        log_cmd = profile.log_cmd
    # the engine judges the last launch (as `wait` does: a fast verdict); the log pane reads the whole file itself
    if log_cmd is not None and log is None:
        followed = log_cmd
    else:
        path = log or (record.log_path if record is not None else None) or profile.log_path
        followed = Path(path) if path is not None else None
    node = NodePlan(hostname(), followed, url=_url(url if url is not None else profile.url),
                    pid=record.pid if record is not None else None, profile=profile, record=record)
    return _profile_spec(profile, (node,), Limits(), gpus=plan, record=_record(record_bundle, bundle), **kw)


def demo_spec(speed: float, story: str = "crash", *, nodes: int = 1, record_bundle: bool = True,
              isolate: bool = True, stall: float | None = None, tp: int | None = None) -> tuple[SessionSpec, Demo | NodesDemo]:
    """`symmtui demo`: its temp dir, sandbox and stand-in NVML (or the 2-node story's two simulated nodes
    and exporters), the profile, and the first launch (the crash story's dies with KeyError: 12)."""
    from symmtui.bundle.wire import demo_bundle_path  # the demo's simulated servers: only `symmtui demo`
    from symmtui.demo.nodes import TP, build_nodes_demo
    from symmtui.demo.story import HOST_NAME, PROFILE_NAME, build_demo

    if nodes > 1:  # the 2-node story (no bundle: it is recorded per node next to logs in its temp dir)
        stacks = user_state_dir("stacks")  # the user's: a dump saved in the demo outlives it
        pair = build_nodes_demo(speed, isolate=isolate, stall=stall, tp=tp if tp is not None else TP)
        spec = _profile_spec(pair.profile, _nodes(pair.profile, url=pair.profile.url, follow=False), Limits(),
                             gpus=GpuPlan(per_node=True), sample_gpus=True, auto_stacks=True,
                             first_launch="launch", stop_at_close=True, stacks_dir=stacks)
        return spec, pair
    kept = demo_bundle_path(story) if record_bundle else None  # the user's state dir, before the demo isolates its own
    stacks = user_state_dir("stacks")  # the same: a dump saved in the demo outlives it
    demo = build_demo(speed, story=story, isolate=isolate)
    node = NodePlan(HOST_NAME, demo.profile.log_cmd, url=demo.profile.url, profile=demo.profile, follow=False)
    spec = SessionSpec(PROFILE_NAME, HOST_NAME, (node,), bringup_settings(demo.profile), profile=demo.profile,
                       sample_gpus=True, port_owner=True, auto_stacks=True,
                       patch=PatchTarget(demo.site, "sglang"), gpu_timeout=10.0, port_timeout=10.0,
                       first_launch="unchecked", stop_at_close=True,
                       record=Record(dest=kept) if kept is not None else None, stacks_dir=stacks)
    return spec, demo


# ---- the Session ------------------------------------------------------------------------------

def open_session(spec: SessionSpec, clock: Callable[[], float] = time.monotonic, *, nvml: Nvml | None = None,
                 on_close: Sequence[Callable[[], None]] = ()) -> Session:
    """The Session of ``spec`` with its plug-ins, started (following, sampling), and its first launch made;
    ``clock``: the one its timeouts, stalls and heartbeats read (tests pass one they move).

    What only the caller could make goes to the Session, which owns it from here: ``nvml`` (a stand-in it
    drives), ``on_close`` (run last when it closes, or at once when it cannot be built: the demo's temp dir).
    A plug-in that cannot start (a taken metrics port) is one UserError line, with nothing left running."""
    try:
        session = Session(spec, clock=clock, nvml=nvml)
    except BaseException:
        for hook in reversed(on_close):  # the demo's temp dir: nothing else will remove it
            hook()
        raise
    for hook in on_close:  # the first registered run last (Session.close runs its closers in reverse)
        session.on_close(hook)
    try:  # each plug-in's modules load only when the spec names it (the recorder's, httpx, prometheus_client)
        if spec.metrics is not None:
            # prometheus_client (~90 ms): only with --metrics-port
            from symmtui.metrics import plug_in as metrics_plug_in

            metrics_plug_in(session, spec.metrics)
        if spec.record is not None:
            # the recorder (envinfo, bundle codec, ~60 ms): only a recorded session
            from symmtui.bundle.wire import record

            record(session, spec.record)
        if spec.notify is not None:
            # the notifier (httpx for webhooks): only with notifications on
            from symmtui.notify.notifier import plug_in as notify_plug_in

            notify_plug_in(session, spec.notify)
        session.start()
        if spec.first_launch is not None:
            session.ask(Launch(checked=spec.first_launch != "unchecked"))
    except BaseException:
        session.close()
        raise
    return session


def open_demo(spec: SessionSpec, demo: Demo | NodesDemo, clock: Callable[[], float] = time.monotonic) -> Session:
    """The demo's Session (``demo_spec``'s pair): its stand-in NVML and its clean-up handed over with it."""
    from symmtui.demo.story import Demo as StoryDemo  # the demo's own: only `symmtui demo`

    return open_session(spec, clock, nvml=demo.nvml if isinstance(demo, StoryDemo) else None, on_close=(demo.close,))
