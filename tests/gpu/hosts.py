"""Stand-in hosts built from the 8x RTX PRO 6000 scenario: mixed capabilities, NVLink between some pairs only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from symmtui.gpu.standin.scenarios import rtx_pro_6000_x8_pcie


def mixed_capability_host(caps: dict[int, tuple[int, int] | None]) -> dict[str, Any]:
    """The 8-GPU PCIe host with GPU i reporting ``caps[i]`` (None: NVML answers NotSupported)."""
    data = rtx_pro_6000_x8_pcie()
    for i, cap in caps.items():
        dev = data["devices"][i]
        dev["nvmlDeviceGetCudaComputeCapability"] = {"e": 3} if cap is None else {"v": list(cap)}
    data["name"] = "mixed-capability"
    return data


def nvlink_pair_host() -> dict[str, Any]:
    """The 8-GPU PCIe host where GPU0 and GPU1 alone are joined by one direct NVLink (a bridge)."""
    data = rtx_pro_6000_x8_pcie()
    devices = data["devices"]
    for me, other in ((0, 1), (1, 0)):
        remote = devices[other]["nvmlDeviceGetPciInfo"]["v"]["__struct__"]["busId"]
        devices[me].update({
            "nvmlDeviceGetNvLinkState:0": {"v": 1},
            "nvmlDeviceGetNvLinkState:1": {"e": 3},
            "nvmlDeviceGetNvLinkVersion:0": {"v": 5},
            "nvmlDeviceGetNvLinkRemoteDeviceType:0": {"v": 0},
            "nvmlDeviceGetNvLinkRemotePciInfo:0": {"v": {"__struct__": {"busId": remote}}},
        })
    data["pairs"]["0-1"]["nvmlDeviceGetP2PStatus:2"] = {"v": 0}
    data["name"] = "nvlink-one-pair"
    return data


def write_host(data: dict[str, Any], path: Path) -> Path:
    """The scenario as a recording file ($SYMMTUI_NVML_STANDIN accepts its path)."""
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
