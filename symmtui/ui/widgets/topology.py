"""Topology: the GPU link matrix in nvidia-smi notation, its legend and the derived facts."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from symmtui.gpu.topology import Topology

_PCIE = {"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"}


def _cell_style(cell: str) -> str:
    if cell == "X":
        return "$topo-self"
    if cell.startswith("NV"):
        return "bold $topo-nvlink"
    if cell in _PCIE:
        return "$topo-pcie"
    return "$muted"


SHORT_LEGEND = {
    "X": "self",
    "NV#": "NVLink (# links)",
    "PIX": "one PCIe switch",
    "PXB": "several PCIe switches",
    "PHB": "PCIe host bridge",
    "NODE": "same NUMA node",
    "SYS": "across CPU sockets",
    "SOC": "across CPU sockets",
}


def _is_key_fact(fact: str) -> bool:
    """The facts that decide what the SM120 patch can give: NVLink / multicast ones come first."""
    low = fact.lower()
    return "nvlink" in low or "multicast" in low or "pcie only" in low


def render_topology(topology: Topology, *, legend: bool = True) -> Content:
    """The derived facts, then the matrix with coloured cells, then a short legend of the codes used."""
    n = len(topology.matrix)
    width = max([4] + [len(cell) for row in topology.matrix for cell in row]) + 1
    lines: list[Content] = []
    key_facts = [f for f in topology.facts if _is_key_fact(f)]
    other_facts = [f for f in topology.facts if not _is_key_fact(f)]
    for fact in key_facts:
        lines.append(Content.assemble(("▸ ", "$accent"), (fact, "bold")))
    header = "GPU  " + "".join(f"{j}".ljust(width) for j in range(n))
    lines.append(Content.styled(header.rstrip(), "bold"))
    for i, row in enumerate(topology.matrix):
        parts: list[Content | str | tuple[str, str]] = [(f"{i:<5}", "bold")]
        for j, cell in enumerate(row):
            parts.append((cell if j == len(row) - 1 else cell.ljust(width), _cell_style(cell)))
        lines.append(Content.assemble(*parts))
    if legend:
        used = {cell for row in topology.matrix for cell in row}
        items: list[Content | str | tuple[str, str]] = []
        for code, meaning in SHORT_LEGEND.items():
            if code in used or (code == "NV#" and any(c.startswith("NV") for c in used)):
                items += [(code, _cell_style(code if code != "NV#" else "NV1")), (f" {meaning}  ", "$muted")]
        if items:
            lines.append(Content.assemble(*items))
    for fact in other_facts:
        lines.append(Content.assemble(("▸ ", "$accent"), (fact, "$muted")))
    return Content("\n").join(lines)


class TopologyView(VerticalScroll):
    """Shows one Topology (computed once by the engine: links do not change while we run); scrolls."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Topology"
        self.topology: Topology | None = None
        self._body = Static(Content.styled("reading topology…", "$muted"), id="topology-body")

    def compose(self) -> ComposeResult:
        yield self._body

    def show(self, topology: Topology | None, reason: str | None = None) -> None:
        self.topology = topology
        if topology is None:
            self._body.update(Content.styled(f"topology: {reason or 'n/a'}", "$muted"))
        elif not topology.matrix:
            self._body.update(Content.styled(f"topology: {reason or 'no GPUs'}", "$muted"))
        else:
            self._body.update(render_topology(topology))
