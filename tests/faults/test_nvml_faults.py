"""NVML faults, each created for real and checked end to end: a state or n/a, never an exception or a crash."""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.results import NA
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.standin import load_standin, shared_standin
from symmtui.gpu.standin.record import record

WAIT = 30.0


@pytest.fixture(autouse=True)
def _no_env_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test picks its NVML; a $SYMMTUI_NVML_STANDIN from the caller's shell must not leak in."""
    monkeypatch.delenv("SYMMTUI_NVML_STANDIN", raising=False)


@pytest.fixture
def env_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh scenario file, selected through $SYMMTUI_NVML_STANDIN (as the demo does), shared in-process."""
    mod = load_standin("rtx-pro-6000-x8-pcie")
    path = tmp_path / "rtx.json"
    data = record(mod, "rtx-env")
    data["dynamic"] = True
    data["model"] = {"mem_fraction": 0.88}
    path.write_text(json.dumps(data))
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", str(path))
    return str(path)


def test_nvml_library_missing_on_this_host() -> None:
    """The real pynvml on a machine without libnvidia-ml (this CI machine)."""
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        pass
    else:
        pytest.skip("a real libnvidia-ml is installed here")
    nvml = Nvml()
    assert not nvml.available()
    assert nvml.unavailable_reason == (
        "NVML unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver installed on this host?)"
    )
    assert nvml.infos() == () and nvml.sample_all() == () and nvml.device_count() == 0
    assert nvml.driver_version() is NA


def test_python_binding_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    nvml = Nvml()
    assert not nvml.available()
    reason = nvml.unavailable_reason or ""
    assert reason.startswith("NVML unavailable: the Python binding is missing") and "nvidia-ml-py" in reason


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (9, "NVIDIA kernel driver is not loaded"),
        (18, "driver/library version mismatch"),
        (4, "no permission to open the GPUs"),
        (12, "libnvidia-ml.so.1 not found"),
        (999, "Unknown Error"),
    ],
)
def test_init_fails(code: int, words: str, env_scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    shared_standin(env_scenario).standin.fail_init(code)
    assert main(["gpus"]) == 3
    out = capsys.readouterr().out
    assert out.startswith("NVML unavailable: ") and words in out
    assert main(["gpus", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["available"] is False and words in doc["unavailable_reason"]


def test_unknown_standin_in_env_is_a_state_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "no-such-host")
    nvml = Nvml()
    assert not nvml.available()
    assert "unknown stand-in scenario 'no-such-host'" in (nvml.unavailable_reason or "")


def test_field_not_supported_shows_na(env_scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = shared_standin(env_scenario).standin
    host.not_supported("nvmlDeviceGetPowerUsage")
    host.not_supported("nvmlDeviceGetNumaNodeId")
    host.not_supported("nvmlDeviceGetCpuAffinity", gpu=1)
    assert main(["gpus", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert all(g["power_w"] is None and g["na"]["power_w"] == "Not Supported" for g in doc["gpus"])
    assert all(g["temperature_c"] is not None for g in doc["gpus"])
    assert doc["topology"]["cpu_affinity"][1] is None and doc["topology"]["cpu_affinity"][0] == "0-31,64-95"
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    assert "n/a/600W" in out
    assert "GPU1    PIX      X      NODE    NODE    SYS     SYS     SYS     SYS     N/A" in out


def test_gpu_lost_mid_run_others_keep_updating(env_scenario: str) -> None:
    host = shared_standin(env_scenario).standin
    snaps: queue.Queue[GpuSnapshot] = queue.Queue()
    sampler = GpuSampler(Nvml(), interval=0.01, on_sample=snaps.put)
    with sampler:
        first = snaps.get(timeout=WAIT)
        assert first.lost == ()
        host.lose_gpu(5)
        snap = snaps.get(timeout=WAIT)
        while 5 not in snap.lost:
            snap = snaps.get(timeout=WAIT)
        host.set_load(0.3)
        later = snaps.get(timeout=WAIT)
        while later.samples[0].memory_used == snap.samples[0].memory_used:
            later = snaps.get(timeout=WAIT)
    assert later.lost == (5,)
    assert later.samples[5].memory_used is NA and later.infos[5].lost
    assert later.infos[5].name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"  # what was read before
    assert all(not s.lost and s.memory_used != 0 for s in later.samples if s.index != 5)


def test_nvml_call_takes_2_s_and_readers_do_not_wait() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    host = mod.standin
    snaps: queue.Queue[GpuSnapshot] = queue.Queue()
    sampler = GpuSampler(Nvml(mod), interval=0.05, on_sample=snaps.put)
    entered = threading.Event()
    with sampler:
        snaps.get(timeout=WAIT)
        host.slow("nvmlDeviceGetUtilizationRates", 2.0, entered=entered)
        assert entered.wait(WAIT)
        t0 = time.perf_counter()
        latest = sampler.latest()
        read_s = time.perf_counter() - t0
        busy = sampler.busy_for()
        host.heal()  # later rounds are fast again; the one in flight finishes its 2 s
        slow = snaps.get(timeout=WAIT)
        while slow.slowest_call != "nvmlDeviceGetUtilizationRates":
            slow = snaps.get(timeout=WAIT)
    assert latest is not None and read_s < 1.0  # the reader got the last snapshot while NVML hung
    assert busy > 0.0
    assert slow.slowest_call_seconds >= 1.9 and slow.cost_seconds >= slow.slowest_call_seconds
    assert len(slow.samples) == 8 and slow.lost == ()
