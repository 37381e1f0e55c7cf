"""Stand-in scenarios: the recorded 2x H200 NVSwitch host and a generated 8x RTX PRO 6000 PCIe host."""

from __future__ import annotations

import json
import uuid
from importlib import resources
from typing import Any

MiB = 1024 * 1024
DATA_PACKAGE = "symmtui.gpu.standin.data"

# scenario name -> file under standin/data (recordings) or None (generated here)
SCENARIOS: dict[str, str | None] = {
    "rtx-pro-6000-x8-pcie": None,
    "h200-x2-nvswitch": "h200-x2-nvswitch.json",
}


def _v(value: Any) -> dict[str, Any]:
    return {"v": value}


def _e(code: int) -> dict[str, Any]:
    return {"e": code}


def _struct(**fields: Any) -> dict[str, Any]:
    return {"__struct__": fields}


def _mask(cpus: list[int], words: int) -> list[int]:
    out = [0] * words
    for cpu in cpus:
        out[cpu // 64] |= 1 << (cpu % 64)
    return out


def rtx_pro_6000_x8_pcie() -> dict[str, Any]:
    """8x RTX PRO 6000 Blackwell (capability 12.0, 97887 MiB) on PCIe only.

    Two sockets; two PCIe switches per socket, two GPUs behind each switch, so the matrix reads
    PIX inside a switch, NODE across switches of one socket and SYS across sockets. P2P over PCIe
    works inside a socket and is refused across the inter-socket link (CNS); there is no NVLink.
    """
    total = 97887 * MiB
    reserved = 566 * MiB
    bus = [0x16, 0x18, 0x2A, 0x2C, 0x96, 0x98, 0xAA, 0xAC]
    socket_cpus = [list(range(0, 32)) + list(range(64, 96)), list(range(32, 64)) + list(range(96, 128))]
    devices: list[dict[str, Any]] = []
    for i in range(8):
        socket = i // 4
        bus_id = f"00000000:{bus[i]:02X}:00.0"
        dev: dict[str, Any] = {
            "nvmlDeviceGetName": _v("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
            "nvmlDeviceGetUUID": _v("GPU-" + str(uuid.UUID(int=(0x5A17_0000_0000_0000 << 64) | (0x6000 << 16) | i))),
            "nvmlDeviceGetPciInfo": _v(
                _struct(
                    busIdLegacy={"__bytes__": bus_id[4:]},
                    domain=0,
                    bus=bus[i],
                    device=0,
                    pciDeviceId=0x2BB510DE,
                    pciSubSystemId=0x204E10DE,
                    busId={"__bytes__": bus_id},
                )
            ),
            "nvmlDeviceGetMinorNumber": _v(i),
            "nvmlDeviceGetCudaComputeCapability": _v([12, 0]),
            "nvmlDeviceGetMemoryInfo:v2": _v(
                _struct(version=0x02000028, total=total, reserved=reserved, free=total - reserved, used=0)
            ),
            "nvmlDeviceGetMemoryInfo": _v(_struct(total=total, free=total - reserved, used=reserved)),
            "nvmlDeviceGetUtilizationRates": _v(_struct(gpu=0, memory=0)),
            "nvmlDeviceGetTemperature:0": _v(31 + i % 3),
            "nvmlDeviceGetPowerUsage": _v(34000 + 700 * i),
            "nvmlDeviceGetEnforcedPowerLimit": _v(600000),
            "nvmlDeviceGetPowerManagementLimit": _v(600000),
            "nvmlDeviceGetCurrPcieLinkGeneration": _v(1),
            "nvmlDeviceGetCurrPcieLinkWidth": _v(16),
            "nvmlDeviceGetMaxPcieLinkGeneration": _v(5),
            "nvmlDeviceGetMaxPcieLinkWidth": _v(16),
            "nvmlDeviceGetMigMode": _v([0, 0]),
            "nvmlDeviceGetPersistenceMode": _v(1),
            "nvmlDeviceGetComputeRunningProcesses": _v([]),
            "nvmlDeviceGetGraphicsRunningProcesses": _v([]),
            "nvmlDeviceGetNumaNodeId": _e(3),
            "nvmlDeviceGetCpuAffinity": _v(_mask(socket_cpus[socket], 2)),
            "nvmlDeviceGetCpuAffinityWithinScope:0": _v(_mask(socket_cpus[socket], 2)),
            "nvmlDeviceGetCpuAffinityWithinScope:1": _v(_mask(socket_cpus[socket], 2)),
            "nvmlDeviceGetMemoryAffinity:0": _v([1 << socket]),
            "nvmlDeviceGetMemoryAffinity:1": _v([1 << socket]),
            "nvmlDeviceGetNvLinkState:0": _e(3),
        }
        devices.append(dev)
    pairs: dict[str, dict[str, Any]] = {}
    for a in range(8):
        for b in range(a + 1, 8):
            same_switch = a // 2 == b // 2
            same_socket = a // 4 == b // 4
            level = 10 if same_switch else 40 if same_socket else 50
            pci_p2p = 0 if same_socket else 1  # OK inside a socket; chipset not supported across sockets
            pairs[f"{a}-{b}"] = {
                "nvmlDeviceGetTopologyCommonAncestor": _v(level),
                "nvmlDeviceGetP2PStatus:0": _v(pci_p2p),
                "nvmlDeviceGetP2PStatus:1": _v(pci_p2p),
                "nvmlDeviceGetP2PStatus:2": _v(5),
                "nvmlDeviceGetP2PStatus:3": _v(5),
                "nvmlDeviceGetP2PStatus:4": _v(pci_p2p),
            }
    return {
        "name": "rtx-pro-6000-x8-pcie",
        "description": "8x RTX PRO 6000 Blackwell (12.0, 96 GB), PCIe only, 2 sockets x 2 switches",
        "dynamic": True,
        "model": {"mem_fraction": 0.88, "idle_temp": 31, "idle_power_w": 34.0, "power_limit_w": 600.0},
        "system": {
            "nvmlSystemGetDriverVersion": _v("580.95.05"),
            "nvmlSystemGetCudaDriverVersion": _v(13000),
            "nvmlSystemGetNVMLVersion": _v("13.580.95.05"),
        },
        "devices": devices,
        "pairs": pairs,
    }


def load_recording(filename: str) -> dict[str, Any]:
    """A recording shipped in standin/data (written by ``python -m symmtui.gpu.standin.record``)."""
    text = resources.files(DATA_PACKAGE).joinpath(filename).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def scenario_data(name: str) -> dict[str, Any]:
    """The data of a named scenario; unknown names raise KeyError listing the known ones."""
    if name not in SCENARIOS:
        raise KeyError(f"unknown stand-in scenario {name!r}; known: {', '.join(SCENARIOS)}")
    filename = SCENARIOS[name]
    if filename is None:
        return rtx_pro_6000_x8_pcie()
    data = load_recording(filename)
    data.setdefault("name", name)
    return data
