"""Preflight: predict the KeyError crash from a launch command before the long load."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from symmtui.patch import apply, preflight
from symmtui.patch.preflight import launch_python, launched_package, symm_mem_enabled, tp_size

Site = Callable[[str], Path]
SGLANG = ["python", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "8", "--enable-torch-symm-mem"]


def test_crash_predicted_for_0_5_8(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    pred = preflight(SGLANG, "12", site)
    assert pred is not None and pred.will_crash and pred.outcome == "crash"
    assert pred.message.startswith("this launch will crash with KeyError: 12 at distributed init, seconds after launch")
    assert "0.5.8" in pred.message
    # the fix names the install the launch uses, which need not be symmtui's own interpreter's
    assert f"symmtui patch apply --site {pred.report.root} --package sglang --capability 12" in pred.fix
    assert pred.to_json()["check"]["state"] == "needed"


def test_no_prediction_once_patched(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.3")
    assert preflight(SGLANG, (12, 0), site) is not None
    apply(site, "sglang", "12")
    assert preflight(SGLANG, (12, 0), site) is None


@pytest.mark.parametrize(
    "argv",
    [
        [a for a in SGLANG if a != "--enable-torch-symm-mem"],
        [*SGLANG[:5], "--tp", "1", "--enable-torch-symm-mem"],
        ["python", "-m", "sglang.launch_server", "--enable-torch-symm-mem"],  # TP defaults to 1
        ["python", "serve.py", "--tp", "8", "--enable-torch-symm-mem"],  # not sglang / vllm
        [*SGLANG[:-1], "--enable-torch-symm-mem=false"],
    ],
)
def test_no_prediction_when_the_communicator_is_not_built(layout_site: Site, argv: list[str]) -> None:
    assert preflight(argv, "12", layout_site("sglang-0.5.8")) is None


def test_other_gpus_are_fine(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    assert preflight(SGLANG, "10.0", site) is None
    assert preflight(SGLANG, "9.0", site) is None


def test_silently_off_only_on_request(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.16")
    assert preflight(SGLANG, "12", site) is None
    pred = preflight(SGLANG, "12", site, include_off=True)
    assert pred is not None and pred.outcome == "off" and not pred.will_crash
    assert "Device capability 12 not supported" in pred.message


def test_vllm_is_guarded(layout_site: Site) -> None:
    argv = ["vllm", "serve", "m", "--tensor-parallel-size=4"]
    site = layout_site("vllm-0.11")
    assert preflight(argv, "12.0", site) is None
    pred = preflight(argv, "12.0", site, include_off=True)
    assert pred is not None and pred.outcome == "off"


def test_unknown_install_never_blocks(tmp_path: Path) -> None:
    assert preflight(SGLANG, "12", tmp_path) is None


def test_command_parsing() -> None:
    assert launched_package(["sglang", "serve", "--tp", "2"]) == "sglang"
    assert launched_package(["/opt/venv/bin/vllm", "serve"]) == "vllm"
    assert launched_package(["python3", "-m", "vllm.entrypoints.openai.api_server"]) == "vllm"
    assert launched_package(["python -m sglang.launch_server --tp 8"]) == "sglang"
    assert launched_package(["python", "app.py"]) is None
    assert tp_size(["x", "--tp-size=4"]) == 4 and tp_size(["x", "-tp", "2"]) == 2 and tp_size(["x"]) is None
    assert tp_size(["x", "--tp", "eight"]) is None
    assert symm_mem_enabled(["x", "--enable-torch-symm-mem"]) and not symm_mem_enabled(["x"])


def test_config_file_may_set_tp(layout_site: Site) -> None:
    argv = ["python", "-m", "sglang.launch_server", "--config", "c.yaml", "--enable-torch-symm-mem"]
    assert preflight(argv, "12", layout_site("sglang-0.5.8")) is not None


def test_launch_python_from_argv_and_shebang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert launch_python([sys.executable, "-m", "sglang.launch_server"]) == sys.executable
    script = tmp_path / "bin" / "sglang"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nprint('hi')\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    assert launch_python(["sglang", "serve"]) == sys.executable
    env_script = tmp_path / "bin" / "vllm"
    env_script.write_text("#!/usr/bin/env python3\n")
    env_script.chmod(0o755)
    assert launch_python(["vllm"]) is not None
    assert launch_python(["no-such-command-xyz"]) is None


def test_preflight_uses_the_commands_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.patch.conftest import copy_layout

    site = copy_layout("sglang-0.5.8", tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(site))
    argv = [sys.executable, "-m", "sglang.launch_server", "--tp", "2", "--enable-torch-symm-mem"]
    pred = preflight(argv, "12")
    assert pred is not None and pred.report.root == (site / "sglang").resolve()


def test_preflight_sees_the_profiles_env_and_cwd(tmp_path: Path) -> None:
    from tests.patch.conftest import copy_layout

    site = copy_layout("sglang-0.5.8", tmp_path)
    argv = [sys.executable, "-m", "sglang.launch_server", "--tp", "2", "--enable-torch-symm-mem"]
    assert "PYTHONPATH" not in os.environ or str(site) not in os.environ["PYTHONPATH"]
    by_env = preflight(argv, "12", env={"PYTHONPATH": str(site)})
    assert by_env is not None and by_env.report.root == (site / "sglang").resolve()
    by_cwd = preflight(argv, "12", cwd=site)  # `python -m` puts the working dir on sys.path
    assert by_cwd is not None and by_cwd.report.root == (site / "sglang").resolve()
    bindir = tmp_path / "venv-bin"
    bindir.mkdir()
    script = bindir / "sglang"
    script.write_text(f"#!{sys.executable}\n")
    script.chmod(0o755)
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(site)}
    by_path = preflight(["sglang", "serve", "--tp", "4", "--enable-torch-symm-mem"], "12", env=env)
    assert by_path is not None and by_path.will_crash
