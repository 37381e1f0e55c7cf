"""Our NVML wrapper over the stand-in: typed values, nvidia-smi's memory meaning, NA for every error."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import types

import psutil  # type: ignore[import-untyped,unused-ignore]
import pytest

from symmtui.gpu.nvml import Nvml, psutil_lookup
from symmtui.gpu.results import NA, NAType, format_id_list, is_na, na_or, to_mib
from symmtui.gpu.smicheck import compare_query, parse_query_csv
from symmtui.gpu.standin import StandinHost, load_standin

from .conftest import FIXTURES

MiB = 1024 * 1024


def test_na_is_one_falsy_sentinel_shown_as_na() -> None:
    assert NAType() is NA
    assert not NA
    assert str(NA) == "n/a" and repr(NA) == "NA"
    assert pickle.loads(pickle.dumps(NA)) is NA
    assert is_na(NA) and not is_na(0)
    assert na_or(NA, 5) == 5 and na_or(3, 5) == 3


@pytest.mark.parametrize(
    ("ids", "text"),
    [([], ""), ([0], "0"), (range(32), "0-31"), ([*range(32), *range(64, 96)], "0-31,64-95"), ([6, 14, 22], "6,14,22"),
     ([0, 1, 3], "0-1,3")],
)
def test_id_lists_print_like_nvidia_smi(ids: list[int], text: str) -> None:
    assert format_id_list(ids) == text


def test_mib_rounds_up_like_nvidia_smi() -> None:
    assert to_mib(644939776) == 616  # 615.06 MiB reserved: nvidia-smi printed 616 on the H200 host
    assert to_mib(0) == 0
    assert to_mib(97887 * MiB) == 97887
    assert to_mib(NA) is NA


def test_init_is_lazy_and_happens_once(rtx_mod: types.ModuleType, rtx_host: StandinHost) -> None:
    nvml = Nvml(rtx_mod)
    assert rtx_host.calls["nvmlInit"] == 0
    assert nvml.available()
    assert nvml.device_count() == 8
    nvml.infos()
    nvml.sample_all()
    assert rtx_host.calls["nvmlInit"] == 1
    assert nvml.unavailable_reason is None
    assert nvml.is_standin


def test_rtx_pro_6000_static_facts(rtx: Nvml) -> None:
    infos = rtx.infos()
    assert len(infos) == 8
    for info in infos:
        assert info.name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        assert info.capability == (12, 0)
        assert info.family == "Blackwell RTX"
        assert info.sm == "SM120"
        assert to_mib(info.memory_total) == 97887
        assert (info.pcie_max_gen, info.pcie_max_width) == (5, 16)
        assert info.mig_mode == "Disabled"
        assert info.power_limit_w == 600.0
        assert info.errors == ()
    assert [i.pci_bus_id for i in infos][:2] == ["00000000:16:00.0", "00000000:18:00.0"]
    assert len({i.uuid for i in infos}) == 8
    assert rtx.driver_version() == "580.95.05"
    assert rtx.cuda_driver_version() == "13.0"


def test_memory_fills_as_the_model_loads(rtx: Nvml, rtx_host: StandinHost) -> None:
    idle = rtx.sample(0)
    assert idle.memory_used == 0 and idle.processes == ()
    assert to_mib(idle.memory_reserved) == 566
    seen = []
    for fraction in (0.1, 0.5, 1.0):
        rtx_host.set_load(fraction, pids=[5000 + i for i in range(8)])
        s = rtx.sample(3)
        assert not isinstance(s.memory_used, NAType)
        seen.append(s.memory_used)
        assert s.memory_used + na_or(s.memory_reserved, 0) + na_or(s.memory_free, 0) == s.memory_total
        assert not isinstance(s.processes, NAType)
        assert [(p.pid, p.used_memory) for p in s.processes] == [(5003, s.memory_used)]
    assert seen == sorted(seen) and seen[0] < seen[-1]
    full = rtx.sample(3)
    assert 0.85 < na_or(full.memory_fraction, 0.0) < 0.9
    assert full.pcie_gen == 5  # the link trains up under load
    rtx_host.set_load(0.0)
    assert rtx.sample(3).memory_used == 0 and rtx.sample(3).processes == ()


def test_processes_get_names_from_psutil_and_fall_back_to_nvml(rtx: Nvml, rtx_host: StandinHost) -> None:
    me = os.getpid()
    rtx_host.add_process(0, me, 3 * MiB * 1024, name="not-used-for-real-pids")
    rtx_host.add_process(1, 4_194_321, 1024 * MiB, name="/usr/bin/python3.11")
    s0, s1 = rtx.sample(0), rtx.sample(1)
    assert not isinstance(s0.processes, NAType) and not isinstance(s1.processes, NAType)
    (mine,) = s0.processes
    assert mine.pid == me and mine.name == psutil.Process(me).name()
    assert mine.cmdline == tuple(psutil.Process(me).cmdline())
    (ghost,) = s1.processes
    assert ghost.name == "python3.11"  # psutil knows no such pid: NVML's name, basename only
    assert ghost.cmdline is NA
    rtx_host.remove_process(4_194_321)
    assert rtx.sample(1).processes == ()


def test_a_process_on_both_lists_is_shown_once_as_c_plus_g(rtx: Nvml, rtx_host: StandinHost) -> None:
    rtx_host.add_process(2, 4_194_400, 512 * MiB, kind="C+G")
    s = rtx.sample(2)
    assert not isinstance(s.processes, NAType)
    assert [(p.pid, p.kind) for p in s.processes] == [(4_194_400, "C+G")]


def test_zombie_process_has_no_cmdline_but_no_error() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        assert psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE
        name, cmdline = psutil_lookup()(child.pid)
        assert cmdline is NA
        assert name is NA or isinstance(name, str)
    finally:
        child.wait()
    assert psutil_lookup()(child.pid) == (NA, NA)  # gone entirely


def test_v2_not_supported_falls_back_to_v1_with_reserved_unknown(rtx_mod: types.ModuleType) -> None:
    rtx_mod.standin.not_supported("nvmlDeviceGetMemoryInfo_v2")
    nvml = Nvml(rtx_mod)
    s = nvml.sample(0)
    assert s.memory_reserved is NA
    assert to_mib(s.memory_used) == 566  # v1 counts the reservation as used: the honest fallback
    assert ("memory", "Not Supported") in s.errors


def test_each_unsupported_field_is_na_with_its_reason(rtx_mod: types.ModuleType) -> None:
    host: StandinHost = rtx_mod.standin
    for fn in ("nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature", "nvmlDeviceGetCudaComputeCapability",
               "nvmlDeviceGetMigMode", "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        host.not_supported(fn, gpu=4)
    nvml = Nvml(rtx_mod)
    info, s = nvml.infos()[4], nvml.sample(4)
    assert info.capability is NA and info.family is NA and info.mig_mode is NA
    assert ("capability", "Not Supported") in info.errors
    assert s.power_w is NA and s.temperature_c is NA and s.processes is NA
    assert s.memory_used == 0 and s.utilization_gpu == 0  # the rest still read
    other = nvml.sample(5)
    assert other.power_w is not NA and other.errors == ()


def test_lost_gpu_is_marked_and_skipped_while_others_update(rtx: Nvml, rtx_host: StandinHost) -> None:
    rtx.infos()
    rtx.sample_all()
    rtx_host.lose_gpu(6)
    samples = rtx.sample_all()
    assert samples[6].lost and samples[6].memory_used is NA
    assert not any(s.lost for i, s in enumerate(samples) if i != 6)
    assert rtx.lost() == frozenset({6})
    assert rtx.infos()[6].lost and rtx.infos()[6].name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    calls_before = rtx_host.calls["nvmlDeviceGetMemoryInfo_v2"]
    rtx_host.set_load(0.5)
    after = rtx.sample_all()
    assert after[6].lost
    assert after[0].memory_used != samples[0].memory_used  # the others keep updating
    assert rtx_host.calls["nvmlDeviceGetMemoryInfo_v2"] == calls_before + 7  # no calls on the lost one


def test_gpu_lost_before_its_info_was_read(rtx_mod: types.ModuleType) -> None:
    rtx_mod.standin.lose_gpu(0)
    nvml = Nvml(rtx_mod)
    infos = nvml.infos()
    assert infos[0].lost and infos[0].name is NA
    assert not infos[1].lost


def test_other_nvml_errors_mid_sample_are_na(rtx_mod: types.ModuleType) -> None:
    host: StandinHost = rtx_mod.standin
    nvml = Nvml(rtx_mod)
    assert nvml.sample(0).temperature_c == 31
    host.devices[0]["nvmlDeviceGetCurrPcieLinkWidth"] = {"e": 999}
    s = nvml.sample(0)
    assert s.pcie_width is NA and ("pcie_width", "Unknown Error") in s.errors


def test_matches_nvidia_smi_query_on_the_recorded_host(h200: Nvml) -> None:
    text = (FIXTURES / "h200-x2-nvidia-smi.txt").read_text()
    csv_part = text[text.index("index, name"): text.index("query-gpu subprocess")]
    rows = parse_query_csv(csv_part)
    assert len(rows) == 2
    assert compare_query(h200, rows) == []
    s = h200.sample(0)
    assert (to_mib(s.memory_used), to_mib(s.memory_reserved), to_mib(s.memory_total)) == (0, 616, 143771)


def test_load_over_fills_memory_on_the_hosts_clock() -> None:
    now = [100.0]
    mod = load_standin("rtx-pro-6000-x8-pcie", clock=lambda: now[0])
    host: StandinHost = mod.standin
    nvml = Nvml(mod)
    host.load_over(60.0, pids=4_194_100)
    assert nvml.sample(0).memory_used == 0
    now[0] = 130.0
    half = nvml.sample(0).memory_used
    now[0] = 160.0
    full = nvml.sample(0).memory_used
    now[0] = 999.0
    assert nvml.sample(0).memory_used == full  # stays full
    assert isinstance(half, int) and isinstance(full, int)
    assert abs(half / full - 0.5) < 0.001
    s = nvml.sample(7)
    assert not isinstance(s.processes, NAType) and [p.pid for p in s.processes] == [4_194_100]
    host.set_load(0.1)  # an explicit level ends the ramp
    now[0] = 2000.0
    assert to_mib(nvml.sample(0).memory_used) == 8564  # 0.1 * 0.88 * 97321 MiB, floored by the stand-in


def test_env_scenario_is_shared_by_every_wrapper_in_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from symmtui.gpu.standin import shared_standin

    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "h200-x2-nvswitch")
    a, b = Nvml(), Nvml()
    assert a.module is b.module is shared_standin("h200-x2-nvswitch")
    assert a.is_standin and a.device_count() == 2


def test_processes_compare_with_nvidia_smi_compute_apps(rtx: Nvml, rtx_host: StandinHost) -> None:
    from symmtui.gpu.smicheck import compare_processes

    rtx_host.set_load(0.5, pids=[4_194_100 + i for i in range(8)])
    header = "gpu_bus_id, pid, used_gpu_memory [MiB]\n"
    rows = [f"{b}, {4_194_100 + i}, 42821 MiB" for i, b in enumerate(i.pci_bus_id for i in rtx.infos())]
    assert compare_processes(rtx, parse_query_csv(header + "\n".join(rows))) == []
    assert compare_processes(rtx, parse_query_csv(header + "\n".join(rows[:7]))) == [
        "only we list GPU7 pid 4194107 42821 MiB"
    ]


def test_shutdown_then_use_again_reinitialises(rtx_mod: types.ModuleType, rtx_host: StandinHost) -> None:
    nvml = Nvml(rtx_mod)
    assert nvml.sample(0).temperature_c == 31
    nvml.shutdown()
    assert rtx_host.init_count == 0
    assert nvml.sample(0).temperature_c == 31  # lazily initialised again
    assert rtx_host.calls["nvmlInit"] == 2


def test_id_list_text_parses_back_to_the_same_ids() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.sets(st.integers(min_value=0, max_value=1023), max_size=200))
    def check(ids: set[int]) -> None:
        text = format_id_list(ids)
        back: set[int] = set()
        for part in filter(None, text.split(",")):
            lo, _, hi = part.partition("-")
            back.update(range(int(lo), int(hi or lo) + 1))
        assert back == ids

    check()


def test_malformed_answers_become_na_not_exceptions(rtx_mod: types.ModuleType, h200_mod: types.ModuleType) -> None:
    rtx_mod.standin.devices[2]["nvmlDeviceGetMigMode"] = {"v": []}  # our mig[0] fails
    rtx_mod.standin.devices[2]["nvmlDeviceGetCurrPcieLinkWidth"] = {"v": "wide"}  # fails inside the call
    nvml = Nvml(rtx_mod)
    info, sample = nvml.infos()[2], nvml.sample(2)
    assert info.name is NA and info.errors[0][1].startswith("unexpected NVML answer: IndexError")
    assert sample.pcie_width is NA and sample.memory_used is not NA
    assert nvml.infos()[3].mig_mode == "Disabled"
    h200_mod.standin.devices[0]["nvmlDeviceGetComputeRunningProcesses"] = {
        "v": [{"__struct__": {"pid": "not-a-pid", "usedGpuMemory": 1}}]
    }
    h200 = Nvml(h200_mod)
    bad, good = h200.sample(0), h200.sample(1)
    assert bad.memory_used is NA and bad.errors[0][1].startswith("unexpected NVML answer: ValueError")
    assert good.memory_used == 0 and good.processes == ()


def test_binding_newer_than_the_driver_makes_processes_na(rtx_mod: types.ModuleType,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """pynvml raises NVMLLibraryMismatchError (not an NVMLError) when the driver lacks the _v3 process
    call: the process list is n/a (not "none") with that reason; every other field keeps working."""

    def old_driver(handle: object) -> object:
        raise rtx_mod.NVMLLibraryMismatchError("Unversioned function called and the pyNVML version does not match")

    monkeypatch.setattr(rtx_mod, "nvmlDeviceGetComputeRunningProcesses", old_driver)
    rtx_mod.standin.set_load(0.5)
    nvml = Nvml(rtx_mod)
    samples = nvml.sample_all()
    assert len(samples) == 8
    for s in samples:
        assert s.memory_used not in (NA, 0) and s.utilization_gpu is not NA
        assert s.processes is NA  # unknown, not "no processes": the graphics list alone cannot tell
        assert ("processes", "NVMLLibraryMismatchError: Unversioned function called and the pyNVML version "
                "does not match") in s.errors
