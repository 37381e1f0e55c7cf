"""The stable JSON shape of `symmtui gpus --json` (schema "symmtui.gpus/1"): NA becomes null."""

from __future__ import annotations

from typing import Any

from symmtui.gpu.results import GpuInfo, GpuProcess, GpuSample, NAType, NvLink, to_mib
from symmtui.gpu.sampler import GpuSnapshot
from symmtui.gpu.topology import Topology

SCHEMA = "symmtui.gpus/1"


def _j(value: object) -> Any:
    return None if isinstance(value, NAType) else value


def _mib(value: int | NAType) -> int | None:
    mib = to_mib(value)
    return None if isinstance(mib, NAType) else mib


def process_json(proc: GpuProcess) -> dict[str, Any]:
    """One process holding GPU memory."""
    return {
        "pid": proc.pid,
        "name": _j(proc.name),
        "cmdline": None if isinstance(proc.cmdline, NAType) else list(proc.cmdline),
        "used_memory_bytes": _j(proc.used_memory),
        "used_memory_mib": _mib(proc.used_memory),
        "type": proc.kind,
    }


def gpu_json(info: GpuInfo, sample: GpuSample | None) -> dict[str, Any]:
    """One GPU: static facts and the latest sample."""
    cap = info.capability
    out: dict[str, Any] = {
        "index": info.index,
        "host": info.host,
        "host_index": info.host_index,
        "name": _j(info.name),
        "uuid": _j(info.uuid),
        "pci_bus_id": _j(info.pci_bus_id),
        "capability": None if isinstance(cap, NAType) else f"{cap[0]}.{cap[1]}",
        "family": _j(info.family),
        "sm": _j(info.sm),
        "lost": info.lost or (sample is not None and sample.lost),
        "mig_mode": _j(info.mig_mode),
        "persistence_mode": _j(info.persistence_mode),
        "power_limit_w": _j(info.power_limit_w),
        "pcie": {"max_gen": _j(info.pcie_max_gen), "max_width": _j(info.pcie_max_width), "gen": None, "width": None},
        "memory": {
            "total_bytes": _j(info.memory_total),
            "total_mib": _mib(info.memory_total),
            "used_bytes": None,
            "used_mib": None,
            "reserved_bytes": None,
            "reserved_mib": None,
            "free_bytes": None,
            "free_mib": None,
        },
        "utilization_gpu_pct": None,
        "utilization_memory_pct": None,
        "temperature_c": None,
        "power_w": None,
        "processes": None,
        "last_xid": None,
        "na": dict(info.errors),
    }
    if sample is not None:
        mem = out["memory"]
        for key, value in (
            ("used", sample.memory_used),
            ("reserved", sample.memory_reserved),
            ("free", sample.memory_free),
        ):
            mem[f"{key}_bytes"] = _j(value)
            mem[f"{key}_mib"] = _mib(value)
        out["pcie"]["gen"] = _j(sample.pcie_gen)
        out["pcie"]["width"] = _j(sample.pcie_width)
        out["utilization_gpu_pct"] = _j(sample.utilization_gpu)
        out["utilization_memory_pct"] = _j(sample.utilization_memory)
        out["temperature_c"] = _j(sample.temperature_c)
        out["power_w"] = None if isinstance(sample.power_w, NAType) else round(sample.power_w, 3)
        out["processes"] = None if isinstance(sample.processes, NAType) else [process_json(p) for p in sample.processes]
        out["last_xid"] = _j(sample.last_xid)
        out["na"].update(dict(sample.errors))
    return out


def _link_json(link: NvLink) -> dict[str, Any]:
    return {
        "link": link.link,
        "active": link.active,
        "version": _j(link.version),
        "remote_type": link.remote_type,
        "remote_bus_id": _j(link.remote_bus_id),
    }


def topology_json(topo: Topology) -> dict[str, Any]:
    """The matrix, affinities, P2P, NVLinks and derived facts."""
    cap = topo.all_capability
    return {
        "gpus": list(topo.gpus),
        "matrix": [list(row) for row in topo.matrix],
        "pcie": [list(row) for row in topo.pcie],
        "legend": {code: text for code, text in topo.legend},
        "cpu_affinity": [_j(v) for v in topo.cpu_affinity],
        "numa_affinity": [_j(v) for v in topo.numa_affinity],
        "gpu_numa_id": [_j(v) for v in topo.gpu_numa_id],
        "p2p": {kind: [list(row) for row in m] for kind, m in topo.p2p.items()},
        "nvlinks": [
            {
                "gpu": i,
                "active": sum(1 for lk in links if lk.active),
                "versions": sorted({lk.version for lk in links if lk.active and not isinstance(lk.version, NAType)}),
                "links": [_link_json(lk) for lk in links],
            }
            for i, links in enumerate(topo.nvlinks)
        ],
        "nvlink_any": topo.nvlink_any,
        "nvlink_all_pairs": topo.nvlink_all_pairs,
        "p2p_all_pairs": topo.p2p_all_pairs,
        "all_capability": None if cap is None else f"{cap[0]}.{cap[1]}",
        "facts": list(topo.facts),
        "cost_seconds": round(topo.cost_seconds, 6),
    }


def report_json(
    snap: GpuSnapshot,
    topo: Topology | None,
    *,
    driver: str | None,
    cuda: str | None,
    standin: str | None,
    debug: dict[str, Any] | None = None,
    sources: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The whole `symmtui gpus --json` document (``sources``: the exporters read, with ``--source``)."""
    samples = {s.index: s for s in snap.samples}
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "available": snap.unavailable_reason is None,
        "unavailable_reason": snap.unavailable_reason,
        "standin": standin,
        "driver_version": driver,
        "cuda_version": cuda,
        "time": round(snap.time, 3),
        "gpus": [gpu_json(info, samples.get(info.index)) for info in snap.infos],
        "topology": None if topo is None else topology_json(topo),
    }
    if sources is not None:
        out["sources"] = sources
    if debug is not None:
        out["debug"] = debug
    return out
