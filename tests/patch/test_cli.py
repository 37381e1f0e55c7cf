"""`symmtui patch` as a user runs it: a real child process, exit codes, text and JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.patch.conftest import FIXTURES, snapshot

Site = Callable[[str], Path]
ROOT = Path(__file__).resolve().parents[2]


def symmtui(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    extra = (env or {}).get("PYTHONPATH")
    full_env["PYTHONPATH"] = str(ROOT) + (os.pathsep + extra if extra else "")
    return subprocess.run(
        [sys.executable, "-m", "symmtui", "patch", *args],
        capture_output=True, text=True, timeout=120, env=full_env, cwd=ROOT, check=False,
    )


def test_check_apply_check_revert(layout_site: Site) -> None:
    site = str(layout_site("sglang-0.5.8"))
    before = snapshot(Path(site))
    r = symmtui("check", "--site", site, "--capability", "12")
    assert r.returncode == 1, r.stderr
    assert "will crash with KeyError: 12" in r.stdout and "patch needed: symmtui patch apply" in r.stdout
    r = symmtui("diff", "--site", site, "--capability", "12")
    assert r.returncode == 0 and r.stdout.count("+    12: {") == 1
    r = symmtui("apply", "--site", site, "--capability", "12")
    assert r.returncode == 0, r.stderr
    assert "applied: capability 12 added to 2 file(s)" in r.stdout and "caveat:" in r.stdout
    # the undo hint finds this install again (without --site it would look on symmtui's own path)
    assert f"(undo: symmtui patch revert --site {site} --package sglang)" in r.stdout
    r = symmtui("apply", "--site", site, "--capability", "12")
    assert r.returncode == 0 and "already applied" in r.stdout
    r = symmtui("check", "--site", site, "--capability", "12")
    assert r.returncode == 0 and "patched by symmtui" in r.stdout
    r = symmtui("diff", "--site", site, "--capability", "12")
    assert r.returncode == 0 and r.stdout == "" and "nothing to change for capability 12" in r.stderr
    r = symmtui("revert", "--site", site)
    assert r.returncode == 0 and "reverted" in r.stdout
    assert snapshot(Path(site)) == before
    r = symmtui("revert", "--site", site)
    assert r.returncode == 0 and "nothing to revert" in r.stdout


def test_json_output(layout_site: Site) -> None:
    site = str(layout_site("vllm-0.11"))
    r = symmtui("check", "--site", site, "--capability", "12.0", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["action"] == "check" and data["exit_code"] == 1
    [res] = data["results"]
    assert res["package"] == "vllm" and res["state"] == "needed" and res["outcome"] == "off"
    r = symmtui("apply", "--site", site, "--capability", "12.0", "--json")
    res = json.loads(r.stdout)["results"][0]
    assert r.returncode == 0 and res["status"] == "applied" and '+    "12.0": {' in res["diff"]


def test_json_errors_are_still_one_json_document(layout_site: Site, tmp_path: Path) -> None:
    """With --json an error before or while looking at a package still gives a parseable document."""
    r = symmtui("check", "--site", str(tmp_path / "nowhere"), "--capability", "12", "--json")
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert doc["results"] == [] and doc["exit_code"] == 2 and "not a directory" in doc["error"]
    assert r.stderr.startswith("symmtui: error: ") and r.stderr.count("\n") == 1
    site = str(layout_site("sglang-0.5.8"))
    r = symmtui("check", "--site", site, "--capability", "12", "--package", "vllm", "--json")
    assert r.returncode == 2
    [res] = json.loads(r.stdout)["results"]
    assert res["package"] == "vllm" and res["exit_code"] == 2 and "not installed" in res["error"]


def test_both_packages_in_one_site(tmp_path: Path) -> None:
    from tests.patch.conftest import copy_layout

    site = copy_layout("sglang-0.5.8", tmp_path)
    vllm = copy_layout("vllm-0.11", tmp_path / "v")
    for p in vllm.iterdir():
        p.rename(site / p.name)
    r = symmtui("check", "--site", str(site), "--capability", "12", "--json")
    data = json.loads(r.stdout)
    assert [x["package"] for x in data["results"]] == ["sglang", "vllm"]
    assert [x["outcome"] for x in data["results"]] == ["crash", "off"]
    assert r.returncode == 1
    r = symmtui("check", "--site", str(site), "--capability", "12", "--package", "vllm")
    assert r.returncode == 1 and "vllm 0.11.0" in r.stdout and "sglang 0.5.8" not in r.stdout


def test_capability_is_required_without_gpus(layout_site: Site) -> None:
    site = str(layout_site("sglang-0.5.8"))
    r = symmtui("check", "--site", site, env={"LD_LIBRARY_PATH": "/nonexistent", "SYMMTUI_NVML_STANDIN": ""})
    assert r.returncode == 2
    assert "pass --capability 12 (SGLang) or 12.0 (vLLM)" in r.stderr
    assert r.stderr.count("\n") == 1


def test_usage_errors(layout_site: Site, tmp_path: Path) -> None:
    site = str(layout_site("sglang-0.5.8"))
    r = symmtui("check", "--site", site, "--capability", "twelve")
    assert r.returncode == 2 and "--capability 12" in r.stderr
    r = symmtui("check", "--site", str(tmp_path / "empty"), "--capability", "12")
    assert r.returncode == 2 and "not a directory" in r.stderr
    (tmp_path / "empty").mkdir()
    r = symmtui("check", "--site", str(tmp_path / "empty"), "--capability", "12")
    assert r.returncode == 2 and "neither sglang nor vllm" in r.stderr
    r = symmtui("frobnicate")
    assert r.returncode == 2
    r = symmtui("apply", "--site", site, "--capability", "12", "--force")
    assert r.returncode == 2 and "--force is only for revert" in r.stderr
    assert r.stderr.count("\n") == 1


def test_refusal_exit_code_and_detail(layout_site: Site) -> None:
    name = "sglang-0.5.8"
    site = layout_site(name)
    mm = site / FIXTURES[name][2][1]
    mm.write_text(mm.read_text().replace("        10: [6, 8],\n", "        10: [6, 8],\n        12: [8],\n"))
    r = symmtui("apply", "--site", str(site), "--capability", "12")
    assert r.returncode == 3
    assert "one table has capability 12 and the other does not" in r.stderr
    assert "12: [8]" in r.stderr
    r = symmtui("check", "--site", str(site), "--capability", "12")
    assert r.returncode == 3 and "_WORLD_SIZES_MULTIMEM has key 12" in r.stdout


def test_unknown_layout_exit_2(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    (site / FIXTURES["sglang-0.5.8"][2][0]).write_text("TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES = load()\n")
    r = symmtui("apply", "--site", str(site), "--capability", "12")
    assert r.returncode == 2 and "refusing to guess" in r.stderr


def test_profile_python(tmp_path: Path) -> None:
    """--profile: the profile command's interpreter, with the profile's env, finds the install."""
    from tests.patch.conftest import copy_layout

    site = copy_layout("sglang-0.5.8", tmp_path)
    profile = tmp_path / "symmtui.toml"
    profile.write_text(
        f'[server]\ncommand = ["{sys.executable}", "-m", "sglang.launch_server", "--tp", "8"]\n'
        f'log_dir = "{tmp_path}/logs"\nenv = {{ PYTHONPATH = "{site}" }}\n'
    )
    r = symmtui("check", "--profile", str(profile), "--capability", "12")
    assert r.returncode == 1, r.stderr
    assert f"sglang 0.5.8 at {(site / 'sglang').resolve()}" in r.stdout
    r = symmtui("check", "--profile", str(profile), "--site", str(site), "--capability", "12")
    assert r.returncode == 2 and "one of --site, --python or --profile" in r.stderr
    profile.write_text(f'[server]\ncommand = ["{sys.executable}", "-m", "sglang.launch_server"]\nlog_dir = "{tmp_path}/l"\n')
    r = symmtui("check", "--profile", str(profile), "--capability", "12")
    assert r.returncode == 2 and "is not installed for" in r.stderr


def test_capability_and_topology_from_the_gpus(layout_site: Site) -> None:
    """With the NVML stand-in (an 8x RTX PRO 6000 PCIe host) no --capability is needed."""
    site = str(layout_site("sglang-0.5.8"))
    r = symmtui("check", "--site", site, "--json", env={"SYMMTUI_NVML_STANDIN": "rtx-pro-6000-x8-pcie"})
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["capability"] == "12.0"
    [res] = data["results"]
    assert res["key"] == 12 and res["outcome"] == "crash"
    assert any("PCIe only" in c for c in res["caveats"])
    r = symmtui("check", "--site", site, env={"SYMMTUI_NVML_STANDIN": "h200-x2-nvswitch"})
    assert r.returncode == 0 and "already has capability 9" in r.stdout
