"""The GPU-to-GPU matrix in `nvidia-smi topo -m` notation, P2P status, NVLinks and derived facts, read once."""

from __future__ import annotations

import time
from collections.abc import Mapping

from msgspec import Struct, field
from msgspec.structs import replace

from symmtui.gpu.families import family, sm_name
from symmtui.gpu.nvml import TOPOLOGY_LEVELS, Nvml
from symmtui.gpu.results import NA, NAType, NvLink, format_id_list

LEGEND: tuple[tuple[str, str], ...] = (
    ("X", "Self"),
    ("SYS", "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"),
    ("NODE", "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"),
    ("PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"),
    ("PXB", "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"),
    ("PIX", "Connection traversing at most a single PCIe bridge"),
    ("NV#", "Connection traversing a bonded set of # NVLinks"),
)
P2P_LEGEND: tuple[tuple[str, str], ...] = (
    ("X", "Self"),
    ("OK", "Status Ok"),
    ("CNS", "Chipset not supported"),
    ("GNS", "GPU not supported"),
    ("TNS", "Topology not supported"),
    ("NS", "Not supported"),
    ("U", "Unknown"),
)
P2P_CODES: dict[int, str] = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "NS", 5: "NS", 6: "U"}
P2P_KINDS: tuple[str, ...] = ("read", "write", "nvlink", "atomics", "pci")
# nvidia-smi topo -p2p letters for each kind
P2P_FLAGS: dict[str, str] = {"read": "r", "write": "w", "nvlink": "n", "atomics": "a", "pci": "p"}
_LEVEL_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")

Matrix = tuple[tuple[str, ...], ...]


class Topology(Struct, frozen=True):
    """How the GPUs connect, as `nvidia-smi topo -m` shows it, plus the facts the app derives from it."""

    gpus: tuple[str, ...]
    matrix: Matrix  # "X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS" or "N/A"
    legend: tuple[tuple[str, str], ...]
    cpu_affinity: tuple[str | NAType, ...]  # "0-31"
    numa_affinity: tuple[str | NAType, ...]  # "0"
    gpu_numa_id: tuple[int | NAType, ...]
    p2p: Mapping[str, Matrix] = field(default_factory=dict)  # kind -> matrix of "X"/"OK"/"CNS"/...
    nvlinks: tuple[tuple[NvLink, ...], ...] = ()
    nvlink_counts: tuple[tuple[int, ...], ...] = ()
    pcie: Matrix = ()  # the PCIe path alone (what the common-ancestor call answers)
    capabilities: tuple[tuple[int, int] | NAType, ...] = ()
    nvlink_any: bool = False
    nvlink_all_pairs: bool = False
    all_capability: tuple[int, int] | None = None  # set when every GPU has the same capability
    p2p_all_pairs: bool = False  # P2P read and write OK between every pair
    facts: tuple[str, ...] = ()
    cost_seconds: float = 0.0

    def render(self) -> str:
        """The matrix and legend in `nvidia-smi topo -m`'s own layout (tabs, minus its ANSI underline)."""
        lines = ["\t" + "\t".join([*self.gpus, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
        for i, label in enumerate(self.gpus):
            cells = [" X " if c == "X" else c for c in self.matrix[i]]
            cpu = _show(self.cpu_affinity[i])
            numa = _show(self.numa_affinity[i])
            gid = _show(self.gpu_numa_id[i])
            lines.append("\t".join([label, *cells, cpu, numa, "", gid]))
        lines += ["", "Legend:", ""]
        lines += [f"  {code:<4} = {text}" for code, text in self.legend]
        return "\n".join(lines) + "\n"

    def render_p2p(self, kind: str) -> str:
        """One P2P matrix in `nvidia-smi topo -p2p <r|w|n|a|p>`'s layout."""
        matrix = self.p2p[kind]
        lines = [" \t" + "\t".join(self.gpus) + "\t"]
        for i, label in enumerate(self.gpus):
            lines.append(f" {label}\t" + "\t".join(matrix[i]) + "\t")
        lines += ["", "Legend:", ""]
        lines += [f"  {code:<4} = {text}" for code, text in P2P_LEGEND]
        return "\n".join(lines) + "\n"


def _show(value: object) -> str:
    return "N/A" if isinstance(value, NAType) or value == "" else str(value)


def nvlink_count(nvml_links: tuple[tuple[NvLink, ...], ...], buses: tuple[str | NAType, ...], a: int, b: int,
                 nvlink_p2p: int | NAType) -> int:
    """How many NVLinks join GPU a to GPU b, the way `nvidia-smi topo -m` counts them for NV#.

    Direct links count when their remote end is b's PCI address. Links into an NVSwitch count
    when b is reachable through the same fabric: the switch is one b also links to, or (in VMs,
    where the switch hides behind FFFFFFFF:FF:FF.0) NVML's NVLink P2P status says OK. The pair
    gets the smaller of the two sides' counts, so the matrix stays symmetric.
    """
    if isinstance(nvlink_p2p, int) and nvlink_p2p != 0:
        return 0  # NVML says no NVLink P2P path between them: nvidia-smi shows the PCIe level

    def side(x: int, y: int) -> int:
        active = [lk for lk in nvml_links[x] if lk.active]
        direct = sum(1 for lk in active if lk.remote_type == "gpu" and lk.remote_bus_id == buses[y])
        y_switches = {lk.remote_bus_id for lk in nvml_links[y] if lk.active and lk.remote_type == "switch"}
        via = 0
        for lk in active:
            if lk.remote_type != "switch":
                continue
            if isinstance(lk.remote_bus_id, NAType):
                via += 1 if nvlink_p2p == 0 and y_switches else 0
            elif lk.remote_bus_id in y_switches:
                via += 1
        return direct + via

    return min(side(a, b), side(b, a))


def read_topology(nvml: Nvml) -> Topology:
    """Ask NVML once for everything the matrix needs (about 9 ms per pair on a real H200 host)."""
    t0 = time.perf_counter()
    infos = nvml.infos()
    n = len(infos)
    gpus = tuple(f"GPU{i}" for i in range(n))
    buses = tuple(info.pci_bus_id.upper() if isinstance(info.pci_bus_id, str) else NA for info in infos)
    links = tuple(nvml.nvlinks(i) for i in range(n))
    p2p_raw: dict[str, list[list[int | NAType]]] = {k: [[NA] * n for _ in range(n)] for k in P2P_KINDS}
    pcie: list[list[str]] = [["X" if i == j else "N/A" for j in range(n)] for i in range(n)]
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            for kind in P2P_KINDS:
                p2p_raw[kind][a][b] = nvml.p2p_status(a, b, kind)
            if b > a:
                level = nvml.common_ancestor(a, b)
                text = "N/A" if isinstance(level, NAType) else TOPOLOGY_LEVELS.get(level, f"?{level}")
                pcie[a][b] = pcie[b][a] = text
    counts = [[0] * n for _ in range(n)]
    for a in range(n):
        for b in range(n):
            if a != b:
                counts[a][b] = nvlink_count(links, buses, a, b, p2p_raw["nvlink"][a][b])
    matrix = tuple(
        tuple("X" if a == b else (f"NV{counts[a][b]}" if counts[a][b] else pcie[a][b]) for b in range(n))
        for a in range(n)
    )
    p2p = {
        kind: tuple(
            tuple("X" if a == b else _p2p_text(p2p_raw[kind][a][b]) for b in range(n)) for a in range(n)
        )
        for kind in P2P_KINDS
    }
    cpu = tuple(_ids(nvml.cpu_affinity(i)) for i in range(n))
    numa = tuple(_ids(nvml.numa_affinity(i)) for i in range(n))
    gid = tuple(nvml.numa_node_id(i) for i in range(n))
    caps = tuple(info.capability for info in infos)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    nv_any = any(counts[a][b] for a, b in pairs)
    nv_all = bool(pairs) and all(counts[a][b] for a, b in pairs)
    known = [c for c in caps if not isinstance(c, NAType)]
    all_cap = known[0] if known and len(known) == n and len(set(known)) == 1 else None
    p2p_all = bool(pairs) and all(
        p2p["read"][a][b] == "OK" and p2p["write"][a][b] == "OK" and p2p["read"][b][a] == "OK" for a, b in pairs
    )
    topo = Topology(
        gpus=gpus,
        matrix=matrix,
        legend=LEGEND,
        cpu_affinity=cpu,
        numa_affinity=numa,
        gpu_numa_id=gid,
        p2p=p2p,
        nvlinks=links,
        nvlink_counts=tuple(tuple(r) for r in counts),
        pcie=tuple(tuple(r) for r in pcie),
        capabilities=caps,
        nvlink_any=nv_any,
        nvlink_all_pairs=nv_all,
        all_capability=all_cap,
        p2p_all_pairs=p2p_all,
    )
    return replace(topo, facts=derive_facts(topo), cost_seconds=time.perf_counter() - t0)


def _p2p_text(value: int | NAType) -> str:
    return "U" if isinstance(value, NAType) else P2P_CODES.get(value, "U")


def _ids(value: tuple[int, ...] | NAType) -> str | NAType:
    if isinstance(value, NAType):
        return NA
    return format_id_list(value) or NA


def derive_facts(topo: Topology) -> tuple[str, ...]:
    """Plain sentences for the dashboard and the patch: capability, NVLink/multicast, P2P, sockets."""
    n = len(topo.gpus)
    if n == 0:
        return ("no GPUs",)
    facts: list[str] = []
    if topo.all_capability is not None:
        major, minor = topo.all_capability
        who = "the GPU has" if n == 1 else "all GPUs share"
        facts.append(f"{who} capability {major}.{minor} ({family(major, minor)}, {sm_name(major, minor)})")
    else:
        shown = ", ".join(
            f"GPU{i} {'n/a' if isinstance(c, NAType) else f'{c[0]}.{c[1]}'}" for i, c in enumerate(topo.capabilities)
        )
        facts.append(f"GPUs differ in capability (or it is unknown): {shown}")
    if n > 1:
        counts = {topo.matrix[a][b] for a in range(n) for b in range(a + 1, n) if topo.nvlink_counts[a][b]}
        if not topo.nvlink_any:
            facts.append("no NVLink between any pair: multimem/multicast unavailable")
        elif topo.nvlink_all_pairs:
            facts.append(f"NVLink between every pair ({', '.join(sorted(counts))}): multimem/multicast possible")
        else:
            facts.append(
                f"NVLink only between some pairs ({', '.join(sorted(counts))}): multimem/multicast unavailable across the rest"
            )
        if topo.p2p_all_pairs:
            facts.append("P2P read/write OK between every pair")
        else:
            bad = [
                f"GPU{a}-GPU{b} ({topo.p2p['read'][a][b]})"
                for a in range(n)
                for b in range(a + 1, n)
                if topo.p2p["read"][a][b] != "OK"
            ]
            shown = ", ".join(bad[:6]) + (f" and {len(bad) - 6} more" if len(bad) > 6 else "")
            facts.append(f"no P2P read between {shown}")
        widest = max(
            (topo.pcie[a][b] for a in range(n) for b in range(n) if a != b and topo.pcie[a][b] in _LEVEL_ORDER),
            key=_LEVEL_ORDER.index,
            default=None,
        )
        if widest == "SYS":
            facts.append("GPUs span CPU sockets (SYS): cross-socket traffic goes over the inter-socket link")
    return tuple(facts)
