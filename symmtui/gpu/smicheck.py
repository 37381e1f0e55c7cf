"""Compare our NVML view with nvidia-smi's, cell by cell: `python -m symmtui.gpu.smicheck` on a GPU host."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys

from msgspec import Struct

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.results import NAType
from symmtui.gpu.topology import Topology, read_topology

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
MiB = 1024 * 1024
QUERY = "index,memory.total,memory.reserved,memory.used,pcie.link.gen.max,pcie.link.width.max,compute_cap,pci.bus_id"


class TopoText(Struct, frozen=True):
    """`nvidia-smi topo -m` parsed: GPU labels, the GPU-to-GPU cells and the affinity columns."""

    gpus: tuple[str, ...]
    matrix: tuple[tuple[str, ...], ...]
    cpu_affinity: tuple[str, ...]
    numa_affinity: tuple[str, ...]
    gpu_numa_id: tuple[str, ...]


def strip_ansi(text: str) -> str:
    """Text without terminal colour/underline codes."""
    return _ANSI.sub("", text)


def parse_topo_m(text: str) -> TopoText:
    """Parse `nvidia-smi topo -m` output (NIC rows and columns are skipped)."""
    lines = [ln for ln in strip_ansi(text).splitlines() if ln.strip()]
    header = next(ln for ln in lines if "CPU Affinity" in ln)
    cols = [c.strip() for c in header.split("\t")]
    if cols and cols[0] == "":
        cols = cols[1:]
    gpu_cols = [i for i, c in enumerate(cols) if re.fullmatch(r"GPU\d+", c)]
    first_extra = cols.index("CPU Affinity")
    extra_names = [c for c in cols[first_extra:] if c]
    gpus, matrix, extras = [], [], []
    for ln in lines:
        fields = ln.split("\t")
        label = fields[0].strip()
        if not re.fullmatch(r"GPU\d+", label):
            continue
        cells = [f.strip() for f in fields[1:]]
        gpus.append(label)
        matrix.append(tuple(cells[i] for i in gpu_cols))
        rest = [c for c in cells[first_extra:] if c]
        extras.append(dict(zip(extra_names, rest, strict=False)))
    return TopoText(
        gpus=tuple(gpus),
        matrix=tuple(matrix),
        cpu_affinity=tuple(e.get("CPU Affinity", "N/A") for e in extras),
        numa_affinity=tuple(e.get("NUMA Affinity", "N/A") for e in extras),
        gpu_numa_id=tuple(e.get("GPU NUMA ID", "N/A") for e in extras),
    )


def parse_query_csv(text: str) -> list[dict[str, str]]:
    """`nvidia-smi --query-gpu=... --format=csv` rows as dicts keyed by the bare field name."""
    rows = [r for r in csv.reader(io.StringIO(text.strip())) if r]
    if not rows:
        return []
    keys = [re.sub(r"\s*\[.*\]$", "", k.strip()) for k in rows[0]]
    return [dict(zip(keys, (v.strip() for v in r), strict=False)) for r in rows[1:]]


def compare_topology(ours: Topology, smi: TopoText) -> list[str]:
    """Every cell where our matrix or affinity columns differ from nvidia-smi's (empty: they agree)."""
    diffs: list[str] = []
    if tuple(ours.gpus) != smi.gpus:
        return [f"GPU labels differ: ours {ours.gpus} vs nvidia-smi {smi.gpus}"]
    for i, label in enumerate(smi.gpus):
        for j, peer in enumerate(smi.gpus):
            if ours.matrix[i][j] != smi.matrix[i][j]:
                diffs.append(f"{label}-{peer}: ours {ours.matrix[i][j]} vs nvidia-smi {smi.matrix[i][j]}")
        for name, mine, theirs in (
            ("CPU Affinity", ours.cpu_affinity[i], smi.cpu_affinity[i]),
            ("NUMA Affinity", ours.numa_affinity[i], smi.numa_affinity[i]),
            ("GPU NUMA ID", ours.gpu_numa_id[i], smi.gpu_numa_id[i]),
        ):
            shown = "N/A" if isinstance(mine, NAType) else str(mine)
            if shown != theirs:
                diffs.append(f"{label} {name}: ours {shown} vs nvidia-smi {theirs}")
    return diffs


def _mib_field(text: str) -> int | None:
    m = re.match(r"(\d+)", text)
    return int(m.group(1)) if m else None


def compare_query(nvml: Nvml, rows: list[dict[str, str]]) -> list[str]:
    """Memory (MiB), PCIe maxima, capability and bus id against `nvidia-smi --query-gpu` (empty: agree)."""
    diffs: list[str] = []
    infos = {i.index: i for i in nvml.infos()}
    samples = {s.index: s for s in nvml.sample_all()}
    for row in rows:
        idx = int(row["index"])
        info, s = infos.get(idx), samples.get(idx)
        if info is None or s is None:
            diffs.append(f"GPU{idx}: nvidia-smi lists it, we do not")
            continue
        pairs: list[tuple[str, object, object]] = [
            ("memory.total MiB", _mib_field(row["memory.total"]), _div(s.memory_total)),
            ("memory.reserved MiB", _mib_field(row["memory.reserved"]), _div(s.memory_reserved)),
            ("memory.used MiB", _mib_field(row["memory.used"]), _div(s.memory_used)),
            ("pcie.link.gen.max", row["pcie.link.gen.max"], str(info.pcie_max_gen)),
            ("pcie.link.width.max", row["pcie.link.width.max"], str(info.pcie_max_width)),
            ("compute_cap", row["compute_cap"],
             "n/a" if isinstance(info.capability, NAType) else f"{info.capability[0]}.{info.capability[1]}"),
            ("pci.bus_id", row["pci.bus_id"].upper(), str(info.pci_bus_id).upper()),
        ]
        for name, theirs, mine in pairs:
            if theirs != mine:
                diffs.append(f"GPU{idx} {name}: ours {mine} vs nvidia-smi {theirs}")
    return diffs


def compare_processes(nvml: Nvml, rows: list[dict[str, str]]) -> list[str]:
    """Processes per GPU (pid, MiB) against `nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory`."""
    by_bus = {str(i.pci_bus_id).upper(): i.index for i in nvml.infos()}
    theirs = {
        (by_bus.get(r["gpu_bus_id"].upper(), -1), int(r["pid"]),
         _mib_field(r.get("used_gpu_memory") or r.get("used_memory") or ""))
        for r in rows
        if r.get("pid", "").isdigit()
    }
    ours = {
        (s.index, p.pid, _div(p.used_memory))
        for s in nvml.sample_all()
        if not isinstance(s.processes, NAType)
        for p in s.processes
        if "C" in p.kind
    }
    diffs = [f"only nvidia-smi lists GPU{g} pid {pid} {mib} MiB" for g, pid, mib in sorted(theirs - ours)]
    diffs += [f"only we list GPU{g} pid {pid} {mib} MiB" for g, pid, mib in sorted(ours - theirs)]
    return diffs


def _div(value: object) -> int | None:
    return -(-value // MiB) if isinstance(value, int) else None


def main() -> int:
    """Run nvidia-smi and our wrapper side by side; 0 when they agree, 1 when not, 3/4 when one is missing."""
    nvml = Nvml()
    if not nvml.available():
        print(nvml.unavailable_reason)
        return 3
    smi = shutil.which("nvidia-smi")
    if smi is None:
        print("nvidia-smi not found on PATH: nothing to compare with")
        return 4
    topo_text = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True, check=False).stdout
    query = subprocess.run([smi, f"--query-gpu={QUERY}", "--format=csv"], capture_output=True, text=True,
                           check=False).stdout
    apps = subprocess.run([smi, "--query-compute-apps=gpu_bus_id,pid,used_memory", "--format=csv"],
                          capture_output=True, text=True, check=False).stdout
    topo = read_topology(nvml)
    diffs = compare_topology(topo, parse_topo_m(topo_text)) + compare_query(nvml, parse_query_csv(query))
    app_rows = parse_query_csv(apps)
    diffs += compare_processes(nvml, app_rows)
    exact = strip_ansi(topo_text) == topo.render()
    n = len(topo.gpus)
    print(f"compared {n * n} matrix cells, {3 * n} affinity cells, {7 * n} query fields, "
          f"{len(app_rows)} compute processes; "
          f"text identical to nvidia-smi topo -m (minus ANSI): {exact}")
    for line in diffs:
        print("DIFF", line)
    print("AGREE" if not diffs else f"DIFFER ({len(diffs)})")
    return 0 if not diffs else 1


if __name__ == "__main__":
    sys.exit(main())
