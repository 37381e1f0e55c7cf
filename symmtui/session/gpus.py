"""A Session's GPUs: opened from its spec's GpuPlan, one sampler over them, the topology read once, our pids and
the capability; closed with the Session."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from symmtui.gpu.facts import (
    PatchFacts,
    capabilities,
    capabilities_of,
    gpu_pids_from,
    holders_in,
    open_nvml,
    patch_facts,
)
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.source import GpuSource
from symmtui.gpu.topology import Topology, read_topology
from symmtui.launch.report import GpuPids
from symmtui.proc import proctree
from symmtui.session.messages import GpuRound, SessionMessage, TopologyRead
from symmtui.session.spec import GpuPlan, SessionSpec
from symmtui.stacks.gpus import utilization_of

if TYPE_CHECKING:
    from symmtui.launch.profile import Profile
    from symmtui.launch.state import LaunchRecord

OURS_REFRESH = 5.0  # seconds between walks of the process table when the GPU process list is unchanged


def nvml_of(plan: GpuPlan) -> Nvml | None:
    """This host's NVML as ``plan.nvml`` asks (see GpuPlan), or None."""
    if plan.nvml == "always":
        return Nvml()
    return open_nvml() if plan.nvml == "if-present" else None


def open_gpu_source(plan: GpuPlan, profile: Profile | None, nvml: Nvml | None) -> GpuSource | None:
    """What the sampler reads for ``plan``: None for NVML alone (the sampler reads ``nvml`` itself), else one
    source over the specs (``gpu.specs.open_sources``), or every ``[[nodes]]`` node's GPUs as one, each GPU's
    ``host`` its node's name."""
    # the GPU sources (exporters: httpx): only a plan that names them
    from symmtui.gpu.specs import NVML, open_source, open_sources

    if plan.per_node:
        from symmtui.gpu.multi import MultiSource
        from symmtui.gpu.named import NamedSource

        nodes = profile.nodes if profile is not None else ()
        return MultiSource([NamedSource(open_source(n.gpus, nvml=nvml, timeout=plan.timeout), n.name) for n in nodes])
    if [s.strip().lower() for s in plan.sources] in ([], [NVML]):
        return None
    return open_sources(plan.sources, nvml=nvml, timeout=plan.timeout)


class Gpus:
    """The GPU side of a Session: ``start`` the sampler (its rounds posted as GpuRound with our pids and the
    capability), read the topology, answer which pids hold memory and the facts the patch needs. The Session
    tells it which launches are ours (``track``); it never asks the Session anything."""

    def __init__(self, spec: SessionSpec, send: Callable[[SessionMessage], None], *, nvml: Nvml | None = None) -> None:
        """Open what ``spec.gpus`` names; ``nvml``: one the caller made (a stand-in it drives), owned from here."""
        self.spec = spec
        plan = spec.gpus or GpuPlan()
        self.nvml = nvml if nvml is not None else nvml_of(plan)
        try:
            self.source = open_gpu_source(plan, spec.profile, self.nvml)
        except BaseException:  # a malformed exporter URL: the NVML opened above is closed, not left behind
            if self.nvml is not None:
                self.nvml.shutdown()
            raise
        """What the sampler reads (exporters, several nodes); None: ``nvml`` itself."""
        self._send = send
        self._launches: tuple[LaunchRecord, ...] = ()
        self.sampler: GpuSampler | None = None
        self.topology: Topology | None = None
        self.capability: tuple[int, int] | None = None
        self._ours: frozenset[int] = frozenset()
        self._ours_key: object = None  # (the GPU holders, the tracking) our pids were computed for
        self._tracked = 0  # bumped by every ``track``: a walk begun before it does not count for after it
        self._ours_at = 0.0
        self._stacks_nvml: Nvml | None = None

    def gpu_pids(self) -> GpuPids | None:
        """Which pids hold GPU memory (a Supervisor's stop waits for them); None without NVML."""
        return gpu_pids_from(self.nvml) if self.nvml is not None else None

    def start(self, *, topology: bool) -> None:
        """Sample the source (NVML, or the spec's exporters / nodes); read NVML's topology once, or say why not."""
        source = self.source if self.source is not None else self.nvml
        if source is not None:
            self.sampler = GpuSampler(source, interval=self.spec.sample_interval, on_sample=self._on_sample)
            self.sampler.start()
        if not topology or self.nvml is None:  # the topology is this host's (NVML's); exporters publish none
            why = "no topology for a multi-node server" if not topology else "no NVML in this session"
            self._send(TopologyRead(None, why))
            return
        threading.Thread(target=self._read_topology, args=(self.nvml,), name="symmtui-topology", daemon=True).start()

    def _read_topology(self, nvml: Nvml) -> None:
        reason: str | None = None
        try:
            self.topology = read_topology(nvml)
        except Exception as exc:  # noqa: BLE001 - any NVML failure is shown in the panel, not a crash
            reason = str(exc) or type(exc).__name__
        if self.topology is not None and not self.topology.matrix:
            reason = nvml.unavailable_reason or "no GPUs"
        self._send(TopologyRead(self.topology, reason))

    def _on_sample(self, snapshot: GpuSnapshot) -> None:
        """GpuSampler's callback (its thread): add our pids and the capability, post the round."""
        key = (holders_in(snapshot.samples).pids, self._tracked)  # (read before the walk: see track)
        now = time.monotonic()
        if key != self._ours_key or now - self._ours_at > OURS_REFRESH:
            # a walk of the process table: only when the GPU's process list or our launches changed, or now and then
            self._ours = frozenset(self._our_pids())
            self._ours_key, self._ours_at = key, now
        self.capability = capabilities_of(snapshot.infos).for_patch or self.capability
        self._send(GpuRound(snapshot, self._ours, self.capability))

    def track(self, launches: Iterable[LaunchRecord]) -> None:
        """Our launches now (the Session's, after a launch): their processes are walked at the next round."""
        self._launches = tuple(launches)
        # a new key, not a reset of it: a round walking the table meanwhile (with the launches before these)
        # stored its key after a reset, and a relaunched server stayed a "stranger" until OURS_REFRESH
        self._tracked += 1

    def _our_pids(self) -> list[int]:
        """Every process of our launches (their whole trees)."""
        if not self._launches:
            return []

        return [p.pid for r in self._launches
                for p in proctree.collect(r.pid, r.create_time, r.sid, r.pgid, r.launch_id)]

    def capability_now(self) -> tuple[int, int] | None:
        """The capability the SM120 patch targets (the sampler's, else asked of NVML now)."""
        if self.capability is None and self.nvml is not None:
            self.capability = capabilities(self.nvml).for_patch
        return self.capability

    def patch_facts(self) -> PatchFacts:
        """The host facts the patch check needs (the same answer `symmtui patch` gets)."""
        return patch_facts(self.nvml, self.topology)

    def utilization(self) -> list[int | None]:
        """Each GPU's utilization in the sampler's last round; without a sampler (`wait`), one NVML round taken
        now (``spec.stacks_gpus``); None where NVML could not say."""
        snap = self.sampler.latest() if self.sampler is not None else None
        if snap is not None:
            return utilization_of(snap.samples)
        if self.spec.stacks_gpus:
            if self._stacks_nvml is None:
                self._stacks_nvml = Nvml()
            return utilization_of(self._stacks_nvml.sample_all())
        return []

    def busy_for(self) -> float | None:
        return self.sampler.busy_for() if self.sampler is not None else None

    def stop(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()

    def close(self) -> None:
        """Close the source and NVML (the Session owns them); not while the sampler is still inside a hung
        NVML call (its stop timed out): shutting NVML down under a call can crash the process, and the
        process is ending anyway."""
        if self.source is not None:
            self.source.close()
        if self.sampler is not None and self.sampler.running:
            self._stacks_nvml = self.nvml = None
            return
        for nvml in (self._stacks_nvml, self.nvml):
            if nvml is not None:
                nvml.shutdown()
