"""The stand-in behaves like real pynvml: same names, signatures, error classes and codes; replays recordings."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pynvml
import pytest

from symmtui.gpu.standin import SCENARIOS, load_standin, standin_host
from symmtui.gpu.standin.codec import from_json, to_json
from symmtui.gpu.standin.errors import NVMLError
from symmtui.gpu.standin.module import CONSTANTS, FUNCTIONS
from symmtui.gpu.standin.record import record

from .conftest import FIXTURES

PACKAGE_DATA = Path(__file__).resolve().parents[2] / "symmtui" / "gpu" / "standin" / "data"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_standin_function_has_the_real_signature(name: str) -> None:
    real = getattr(pynvml, name)
    mod = load_standin("rtx-pro-6000-x8-pcie")
    ours = getattr(mod, name)
    real_params = [(p.name, p.default) for p in inspect.signature(real).parameters.values()]
    our_params = [(p.name, p.default) for p in inspect.signature(ours).parameters.values()]
    assert our_params == real_params


def test_error_classes_and_codes_match_real_pynvml() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    real_codes = {k: v for k, v in vars(pynvml).items() if k.startswith("NVML_ERROR_")}
    assert real_codes, "pynvml exposes its codes"
    for name, code in real_codes.items():
        assert getattr(mod, name) == code, name
    real_classes = [k for k in vars(pynvml) if k.startswith("NVMLError_")]
    for cls_name in real_classes:
        ours = getattr(mod, cls_name)
        real = getattr(pynvml, cls_name)
        assert issubclass(ours, mod.NVMLError)
        assert ours().value == real().value, cls_name
        # NVMLError(code) picks the subclass, as in pynvml
        assert type(mod.NVMLError(real().value)) is ours


def test_nvmlerror_str_and_equality_follow_pynvml() -> None:
    assert str(NVMLError(15)) == str(pynvml.NVMLError(15)) == "GPU is lost"
    assert NVMLError(3) == NVMLError(3)
    assert isinstance(NVMLError(3), NVMLError)
    assert str(NVMLError(12345)) == "NVML Error with code 12345"


def test_constants_match_real_pynvml() -> None:
    for name, value in CONSTANTS.items():
        real = getattr(pynvml, name)
        if name == "NVML_P2P_CAPS_INDEX_READ" and isinstance(real, tuple):
            assert real == (value,)  # pynvml 13's stray comma; the C value is the same
            continue
        if name == "NVML_NVLINK_MAX_LINKS":
            assert value == real or value >= 18
            continue
        assert value == real, name


def test_calls_before_init_raise_uninitialized(rtx_mod: object) -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    with pytest.raises(mod.NVMLError_Uninitialized):
        mod.nvmlDeviceGetCount()
    mod.nvmlInit()
    assert mod.nvmlDeviceGetCount() == 8
    with pytest.raises(mod.NVMLError_InvalidArgument):
        mod.nvmlDeviceGetHandleByIndex(8)
    mod.nvmlShutdown()
    with pytest.raises(mod.NVMLError_Uninitialized):
        mod.nvmlDeviceGetCount()


def test_recording_in_package_is_the_fixture_recorded_on_the_host() -> None:
    fixture = json.loads((FIXTURES / "h200-x2.json").read_text())
    shipped = json.loads((PACKAGE_DATA / SCENARIOS["h200-x2-nvswitch"]).read_text())  # type: ignore[operator]
    assert shipped == fixture


def test_h200_replay_answers_what_the_host_answered() -> None:
    data = json.loads((FIXTURES / "h200-x2.json").read_text())
    mod = load_standin("h200-x2-nvswitch")
    mod.nvmlInit()
    h = mod.nvmlDeviceGetHandleByIndex(1)
    assert mod.nvmlDeviceGetUUID(h) == data["devices"][1]["nvmlDeviceGetUUID"]["v"]
    mem = mod.nvmlDeviceGetMemoryInfo(h, version=mod.nvmlMemory_v2)
    assert (mem.used, mem.reserved, mem.total) == (0, 644939776, 150754820096)
    assert mod.nvmlDeviceGetMemoryInfo(h).used == 644939776  # v1 counts the reservation as used
    assert mod.nvmlDeviceGetNvLinkRemoteDeviceType(h, 17) == mod.NVML_NVLINK_DEVICE_TYPE_SWITCH
    with pytest.raises(mod.NVMLError_InvalidArgument):
        mod.nvmlDeviceGetNvLinkState(h, 18)
    with pytest.raises(mod.NVMLError_NotSupported):
        mod.nvmlDeviceGetNumaNodeId(h)
    assert mod.nvmlDeviceGetTopologyCommonAncestor(h, mod.nvmlDeviceGetHandleByIndex(0)) == 30


def test_record_then_replay_round_trips_every_answer(tmp_path: Path) -> None:
    source = load_standin("rtx-pro-6000-x8-pcie")
    source.standin.set_load(0.5, pids=[111, 222])
    data = record(source, "copy")
    path = tmp_path / "copy.json"
    path.write_text(json.dumps(data))
    again = record(load_standin(path), "copy")
    for key in ("system", "devices", "pairs"):
        assert again[key] == data[key]
    assert data["devices"][1]["nvmlDeviceGetComputeRunningProcesses"]["v"][0]["__struct__"]["pid"] == 222


def test_codec_keeps_bytes_structs_and_lists() -> None:
    value = from_json({"__struct__": {"busId": {"__bytes__": "00000000:16:00.0"}, "bus": 22}})
    assert value.busId == b"00000000:16:00.0" and value.bus == 22
    assert to_json(value) == {"__struct__": {"busId": {"__bytes__": "00000000:16:00.0"}, "bus": 22}}
    assert from_json([[1, 2], {"a": 1}]) == [[1, 2], {"a": 1}]


def test_unknown_scenario_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="rtx-pro-6000-x8-pcie"):
        load_standin("dgx-b300")


def test_standin_host_rejects_a_real_module() -> None:
    with pytest.raises(TypeError):
        standin_host(pynvml)
