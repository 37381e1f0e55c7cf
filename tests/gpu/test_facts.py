"""symmtui.gpu.facts: the one answer for GPU memory holders, capability (mixed hosts) and NVLink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from symmtui.gpu import facts
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.gpu.topology import read_topology
from symmtui.patch import check
from symmtui.patch.hostcaps import with_others
from tests.gpu.hosts import mixed_capability_host, nvlink_pair_host, write_host
from tests.patch.conftest import copy_layout

ROOT = Path(__file__).resolve().parents[2]


def test_holders_checked_empty_then_listed() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    nvml = Nvml(mod)
    assert facts.memory_holders(nvml) == facts.Holders(frozenset())  # checked: nobody holds memory
    standin_host(mod).set_load(0.5, [111, 222])
    assert facts.memory_holders(nvml).pids == {111, 222}
    assert facts.gpu_pids_from(nvml)() == {111, 222}


def test_holders_not_checked_is_none_with_the_reason() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    standin_host(mod).fail_init(9)  # NVML_ERROR_DRIVER_NOT_LOADED
    got = facts.memory_holders(Nvml(mod))
    assert got.pids is None and not got.checked and "NVML unavailable" in got.reason
    assert facts.gpu_pids_from(Nvml(mod))() is None


def test_holders_skip_gpus_that_cannot_list_and_none_when_no_gpu_can() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    host = standin_host(mod)
    host.set_load(0.5, [111])
    host.lose_gpu(0)
    assert facts.memory_holders(Nvml(mod)).pids == {111}  # the other seven GPUs still list it
    for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        host.not_supported(fn)
    got = facts.memory_holders(Nvml(mod))
    assert got.pids is None and got.reason == "no GPU could list its processes"


def test_one_capability_host() -> None:
    caps = facts.capabilities(Nvml(load_standin("rtx-pro-6000-x8-pcie")))
    assert caps.distinct == ((12, 0),) and caps.for_patch == (12, 0) and caps.major == 12
    assert not caps.mixed and caps.also_needed == ()
    assert facts.capabilities(Nvml(load_standin("h200-x2-nvswitch"))).for_patch == (9, 0)


def test_mixed_host_patch_targets_the_highest_and_names_the_others() -> None:
    data = mixed_capability_host({0: (9, 0), 1: (9, 0), 2: (8, 9), 3: None})
    caps = facts.capabilities(Nvml(load_standin(data)))
    assert caps.mixed and caps.distinct == ((8, 9), (9, 0), (12, 0))
    assert caps.per_gpu[3] is None  # unknown stays unknown, never guessed
    assert caps.for_patch == (12, 0)  # the highest, whatever GPU0 is
    assert caps.also_needed == ((9, 0),)  # 8.9 never reads the symmetric-memory tables


def test_no_capability_known_says_why() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    standin_host(mod).fail_init(9)
    caps = facts.capabilities(Nvml(mod))
    assert caps.for_patch is None and "NVML unavailable" in caps.reason
    unknown = facts.capabilities(Nvml(load_standin(mixed_capability_host(dict.fromkeys(range(8))))))
    assert unknown.for_patch is None and unknown.reason == "no GPU reported its compute capability"


def test_nvlink_means_every_pair() -> None:
    assert facts.read_nvlink_every_pair(Nvml(load_standin("h200-x2-nvswitch"))) is True
    assert facts.read_nvlink_every_pair(Nvml(load_standin("rtx-pro-6000-x8-pcie"))) is False
    one_pair = Nvml(load_standin(nvlink_pair_host()))
    assert read_topology(one_pair).nvlink_any  # some NVLink...
    assert facts.read_nvlink_every_pair(one_pair) is False  # ...but multicast needs every pair
    assert facts.nvlink_every_pair(None) is None


def test_mixed_host_caveat_when_the_tables_lack_another_capability(tmp_path: Path) -> None:
    """A host with 11.0 and 12.0 GPUs: the patch adds 12; the tables lack 11 as well, and the report says so."""
    site = copy_layout("sglang-0.5.8", tmp_path)
    report = check(site, "sglang", (12, 0))
    assert with_others(report, [(9, 0)]) == report  # 9 is in the tables: nothing to add
    [extra] = with_others(report, [(11, 0)]).caveats[len(report.caveats):]
    assert "capability 11.0" in extra and "key 11" in extra and "--capability 11.0" in extra
    assert with_others(report, [(12, 1)]) == report  # SGLang keys by major: the same key as the patch's


def test_patch_check_cli_on_a_mixed_host(tmp_path: Path) -> None:
    """`symmtui patch check` on a stand-in 11.0 + 12.0 host: targets 12.0, and names 11.0."""
    site = copy_layout("sglang-0.5.8", tmp_path)
    host = write_host(mixed_capability_host({0: (11, 0), 1: (11, 0)}), tmp_path / "mixed.json")
    env = {**os.environ, "SYMMTUI_NVML_STANDIN": str(host), "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "symmtui", "patch", "check", "--site", str(site), "--json"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT, check=False)
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["capability"] == "12.0"
    [res] = data["results"]
    assert any("capability 11.0" in c for c in res["caveats"])
