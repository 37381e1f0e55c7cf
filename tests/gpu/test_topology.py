"""The topology matrix: nvidia-smi's notation, cell for cell with the recorded host, PCIe-only and NVSwitch rules."""

from __future__ import annotations

import copy
import types
from typing import Any

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.results import NA, NvLink
from symmtui.gpu.smicheck import compare_topology, parse_topo_m, strip_ansi
from symmtui.gpu.standin import StandinHost, load_standin
from symmtui.gpu.standin.scenarios import rtx_pro_6000_x8_pcie
from symmtui.gpu.topology import nvlink_count, read_topology

from .conftest import FIXTURES

RTX_EXPECTED = [
    ["X", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"],
    ["PIX", "X", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"],
    ["NODE", "NODE", "X", "PIX", "SYS", "SYS", "SYS", "SYS"],
    ["NODE", "NODE", "PIX", "X", "SYS", "SYS", "SYS", "SYS"],
    ["SYS", "SYS", "SYS", "SYS", "X", "PIX", "NODE", "NODE"],
    ["SYS", "SYS", "SYS", "SYS", "PIX", "X", "NODE", "NODE"],
    ["SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "X", "PIX"],
    ["SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PIX", "X"],
]


def test_rtx_pro_6000_pcie_matrix_is_pix_node_sys(rtx: Nvml) -> None:
    topo = read_topology(rtx)
    assert [list(r) for r in topo.matrix] == RTX_EXPECTED
    assert topo.gpus == tuple(f"GPU{i}" for i in range(8))
    assert topo.cpu_affinity[:4] == ("0-31,64-95",) * 4 and topo.cpu_affinity[4:] == ("32-63,96-127",) * 4
    assert topo.numa_affinity == ("0",) * 4 + ("1",) * 4
    assert topo.gpu_numa_id == (NA,) * 8
    assert all(links == () for links in topo.nvlinks)
    assert not topo.nvlink_any and not topo.nvlink_all_pairs
    assert topo.all_capability == (12, 0)
    assert not topo.p2p_all_pairs
    assert topo.p2p["read"][0][3] == "OK" and topo.p2p["read"][0][4] == "CNS" and topo.p2p["nvlink"][0][1] == "NS"
    assert topo.facts[0] == "all GPUs share capability 12.0 (Blackwell RTX, SM120)"
    assert "no NVLink between any pair: multimem/multicast unavailable" in topo.facts
    assert any("span CPU sockets" in f for f in topo.facts)


def test_rtx_render_parses_back_to_the_same_cells(rtx: Nvml) -> None:
    topo = read_topology(rtx)
    parsed = parse_topo_m(topo.render())
    assert compare_topology(topo, parsed) == []
    assert [list(r) for r in parsed.matrix] == RTX_EXPECTED


def test_h200_matrix_equals_nvidia_smi_topo_m_from_the_host(h200: Nvml) -> None:
    smi_text = (FIXTURES / "h200-x2-topo-m.txt").read_text()
    smi = parse_topo_m(smi_text)
    topo = read_topology(h200)
    assert smi.matrix == (("X", "NV18"), ("NV18", "X"))  # what the real host printed
    assert compare_topology(topo, smi) == []
    assert topo.render() == strip_ansi(smi_text)  # the whole text, tabs and legend included
    assert topo.pcie[0][1] == "PHB"  # the common-ancestor call alone says PCIe host bridge
    assert topo.nvlink_counts[0][1] == 18
    assert all(lk.remote_type == "switch" and lk.remote_bus_id is NA and lk.version == 6 for lk in topo.nvlinks[0])
    assert topo.nvlink_any and topo.nvlink_all_pairs and topo.p2p_all_pairs
    assert topo.all_capability == (9, 0)
    assert "NVLink between every pair (NV18): multimem/multicast possible" in topo.facts


def test_h200_p2p_matrices_equal_nvidia_smi_topo_p2p(h200: Nvml) -> None:
    text = strip_ansi((FIXTURES / "h200-x2-topo-p2p.txt").read_text())
    topo = read_topology(h200)
    for flag, kind in (("r", "read"), ("w", "write"), ("n", "nvlink"), ("a", "atomics"), ("p", "pci")):
        section = text.split(f"== topo -p2p {flag}\n", 1)[1].split("== topo", 1)[0]
        assert topo.render_p2p(kind) == section, kind


def test_topology_is_computed_once_with_one_ancestor_call_per_pair(rtx: Nvml, rtx_host: StandinHost) -> None:
    read_topology(rtx)
    assert rtx_host.calls["nvmlDeviceGetTopologyCommonAncestor"] == 8 * 7 // 2
    rtx.sample_all()
    assert rtx_host.calls["nvmlDeviceGetTopologyCommonAncestor"] == 28  # sampling never asks again


def _link(link: int, kind: str, bus: Any) -> dict[str, Any]:
    return {
        f"nvmlDeviceGetNvLinkState:{link}": {"v": 1},
        f"nvmlDeviceGetNvLinkVersion:{link}": {"v": 4},
        f"nvmlDeviceGetNvLinkRemoteDeviceType:{link}": {"v": {"gpu": 0, "switch": 2}[kind]},
        f"nvmlDeviceGetNvLinkRemotePciInfo:{link}": {"v": {"__struct__": {"busId": bus}}},
    }


def _scenario(links: dict[int, list[tuple[str, str]]], n: int = 4) -> types.ModuleType:
    """The RTX host cut to n GPUs, with NVLinks: links[gpu] = [(remote kind, remote bus), ...]."""
    data = copy.deepcopy(rtx_pro_6000_x8_pcie())
    data["devices"] = data["devices"][:n]
    data["pairs"] = {k: v for k, v in data["pairs"].items() if max(map(int, k.split("-"))) < n}
    for gpu, items in links.items():
        dev = data["devices"][gpu]
        del dev["nvmlDeviceGetNvLinkState:0"]
        for i, (kind, bus) in enumerate(items):
            dev.update(_link(i, kind, bus))
        dev[f"nvmlDeviceGetNvLinkState:{len(items)}"] = {"e": 2}
    for pair in data["pairs"].values():
        pair["nvmlDeviceGetP2PStatus:2"] = {"v": 0}
    return load_standin(data)


def test_bare_metal_nvswitch_counts_links_into_shared_switches() -> None:
    # 4 GPUs, two visible NVSwitches, 9 links from every GPU into each: nvidia-smi prints NV18
    sw = ["00000000:C1:00.0", "00000000:C2:00.0"]
    links = {g: [("switch", sw[i % 2]) for i in range(18)] for g in range(4)}
    topo = read_topology(Nvml(_scenario(links)))
    assert all(topo.matrix[a][b] == "NV18" for a in range(4) for b in range(4) if a != b)
    assert topo.nvlink_all_pairs


def test_bridge_pair_gets_nv4_and_the_rest_keeps_pcie() -> None:
    # an NVLink bridge between GPU0 and GPU1 only (4 direct links), as on PCIe cards with bridges
    bus0, bus1 = "00000000:16:00.0", "00000000:18:00.0"
    topo = read_topology(Nvml(_scenario({0: [("gpu", bus1)] * 4, 1: [("gpu", bus0)] * 4})))
    assert topo.matrix[0][1] == topo.matrix[1][0] == "NV4"
    assert topo.matrix[0][2] == "NODE" and topo.matrix[2][3] == "PIX"
    assert topo.nvlink_any and not topo.nvlink_all_pairs
    assert any(f.startswith("NVLink only between some pairs (NV4)") for f in topo.facts)


def test_switch_links_do_not_count_when_nvml_says_no_nvlink_p2p() -> None:
    links = [NvLink(i, True, 4, "switch", NA) for i in range(18)]
    buses = ("00000000:00:06.0", "00000000:00:07.0")
    assert nvlink_count((tuple(links), tuple(links)), buses, 0, 1, 0) == 18
    assert nvlink_count((tuple(links), tuple(links)), buses, 0, 1, 5) == 0  # P2P NVLink "NS": PCIe level shown


def test_mixed_capabilities_are_named(rtx_mod: types.ModuleType) -> None:
    rtx_mod.standin.devices[7]["nvmlDeviceGetCudaComputeCapability"] = {"v": [8, 9]}
    topo = read_topology(Nvml(rtx_mod))
    assert topo.all_capability is None
    assert "GPU7 8.9" in topo.facts[0]


def test_lost_gpu_shows_na_cells_and_others_stay(rtx_mod: types.ModuleType) -> None:
    nvml = Nvml(rtx_mod)
    nvml.infos()
    rtx_mod.standin.lose_gpu(2)
    topo = read_topology(nvml)
    assert topo.matrix[2][0] == "N/A" and topo.matrix[0][2] == "N/A"
    assert topo.matrix[0][1] == "PIX" and topo.matrix[4][7] == "NODE"
    assert topo.cpu_affinity[2] is NA


def test_single_gpu_has_no_pair_facts() -> None:
    data = rtx_pro_6000_x8_pcie()
    data["devices"] = data["devices"][:1]
    data["pairs"] = {}
    topo = read_topology(Nvml(load_standin(data)))
    assert topo.matrix == (("X",),)
    assert topo.facts == ("the GPU has capability 12.0 (Blackwell RTX, SM120)",)
