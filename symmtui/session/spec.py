"""What a Session is built from: a frozen spec, made once from the options by ``symmtui.build``.

One server is one node; a ``[[nodes]]`` profile is N. Each node names what its engine follows, the URL
it probes, the process it watches and its launch profile (a Supervisor). The spec also says which GPUs the
Session reads (``GpuPlan``: data; the Session opens them and closes them) and which plug-ins observe it
(a bundle recorder, the notifier, the metrics endpoint). A spec is plain data: no handle, no callable; what
only a caller can make (the demo's stand-in NVML, its clean-up) is handed to ``build.open_session``, and
the Session owns it from there. Nothing is added to a Session after it is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from msgspec import Struct

from symmtui.session.settings import BringupSettings

if TYPE_CHECKING:
    from symmtui.launch.notifyconf import NotifyConfig
    from symmtui.launch.profile import Profile
    from symmtui.launch.state import LaunchRecord
    from symmtui.logs.logcmd import LogCommand

class NodePlan(Struct, frozen=True):
    """One node: its name, what its engine follows, what it probes and watches, and how it launches.

    ``source``: the log file or command followed at the start (None: nothing until a launch).
    ``follows_launch``: after a launch, follow the launch's own output (else ``source`` again: a file
    from its end, a command without the lines it prints again). ``profile``: its launch profile (None:
    watch only). ``record``: the running launch it follows (its history entry is written at the
    verdict unless ``recorded``). ``remote``: its launch reaches another host (ssh): no SM120 preflight,
    no GPU or port wait in the progress, no stacks under STALLED in `wait`.
    """

    name: str
    source: Path | LogCommand | None = None
    url: str | None = None
    pid: int | None = None
    profile: Profile | None = None
    follow: bool = True
    follows_launch: bool = True
    new_only: bool = False
    tail_lines: int | None = None
    record: LaunchRecord | None = None
    recorded: bool = False
    remote: bool = False
    stop: tuple[str, ...] | None = None
    """The node's own stop command (``[[nodes]] stop``: it reaches the remote server)."""
    stop_text: str = ""


class PatchTarget(Struct, frozen=True):
    """Which install the patch edits: ``site`` and ``package`` (None: the one ``python`` imports)."""

    site: Path | None = None
    package: str | None = None
    python: str | None = None


class Record(Struct, frozen=True):
    """The bundle recorder plug-in: one bundle per node in the store (``symmtui.bundle.store``), the head's
    in ``dest`` when given (``--bundle PATH``); the server's command comes from the spec's profile, else from
    ``pid``'s /proc. ``announce``: print where each bundle is on stderr when the Session closes."""

    dest: Path | None = None
    pid: int | None = None
    announce: bool = False


class Notify(Struct, frozen=True):
    """The notifier plug-in: ``config`` (None: the defaults); ``bell_on_screen``: ring through the front
    end's own screen (the dashboard) instead of /dev/tty."""

    config: NotifyConfig | None = None
    bell_on_screen: bool = False


class Metrics(Struct, frozen=True):
    """The Prometheus endpoint plug-in; ``linger``: seconds it keeps answering after the Session closed."""

    port: int
    host: str = "127.0.0.1"
    linger: float = 0.0


class GpuPlan(Struct, frozen=True):
    """Which GPUs the Session reads (it opens them when it is built and closes them when it closes).

    ``nvml``: this host's NVML (which pids hold GPU memory, the capability, the topology, the patch's facts):
    "always" (the dashboard: its panel says why there is none), "if-present" (`launch`, `stop`: none on a host
    without one), "" (none). ``sources``: what the sampler reads instead of NVML alone: the specs of
    ``--gpus`` / ``server.gpus`` ("nvml" or exporters' URLs); ``per_node``: each ``[[nodes]]`` node's own
    ``gpus`` of the spec's profile, its rows grouped by node; ``timeout``: an exporter's HTTP timeout."""

    nvml: Literal["", "always", "if-present"] = ""
    sources: tuple[str, ...] = ()
    per_node: bool = False
    timeout: float = 2.0


class SessionSpec(Struct, frozen=True):
    """Everything a Session is: its nodes (head first), rules and limits, resources and plug-ins."""

    name: str
    host: str
    nodes: tuple[NodePlan, ...]
    settings: BringupSettings
    profile: Profile | None = None
    """The profile it was built from (the profile fix edits its file)."""
    gpus: GpuPlan | None = None
    """Which GPUs it reads (None: none, unless ``sample_gpus`` / ``stacks_gpus`` or an NVML handed to it)."""
    sample_gpus: bool = False
    sample_interval: float = 1.0
    port_owner: bool = False
    """Name the process holding a port in "Address already in use" (a profile's server)."""
    patch: PatchTarget | None = None
    """The SGLang/vLLM install the SM120 patch edits (None: no patch in this session)."""
    auto_stacks: bool = False
    """Dump the stacks of the node the verdict names once each time it becomes STALLED (the dashboard)."""
    stacks_gpus: bool = False
    """Read the GPUs once per stacks dump when nothing samples them (`wait`): the GPUs' evidence of a hang."""
    stacks_dir: Path | None = None
    """Where stack dumps are saved (None: next to the log); the demo's is the user's state dir (its logs are in
    its temp dir, removed when it quits)."""
    spool_log_commands: bool = False
    """Keep a copy of a log command's output (the dashboard's log pane reads old lines back from it)."""
    grace: float | None = None
    gpu_timeout: float = 60.0
    port_timeout: float = 30.0
    probe_timeout: float = 2.0
    first_launch: str | None = None
    """Launch at the start: "unchecked" (the demo's first launch: no stop, no preflight) or "launch"."""
    stop_at_close: bool = False
    """Stop every node's launch when the Session closes (the demo's servers)."""
    record: Record | None = None
    notify: Notify | None = None
    metrics: Metrics | None = None

    @property
    def head(self) -> NodePlan:
        return self.nodes[0]
