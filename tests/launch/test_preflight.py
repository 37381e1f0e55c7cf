"""Relaunch's preflight with the real patch check: a venv whose sglang tables lack capability 12."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from symmtui.launch.profile import load_profile
from symmtui.launch.supervisor import PreflightBlocked, Supervisor
from tests.launch.helpers import run_cli, write_profile


@pytest.fixture(scope="module")
def venv_with_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real interpreter (venv) whose site-packages holds the demo sandbox's sglang 0.5.8 tables."""
    from symmtui.demo.sandbox import write_sandbox

    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    py = root / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    box = write_sandbox(root / "box")
    for src in box.site.iterdir():
        subprocess.run(["cp", "-r", str(src), str(site)], check=True)
    return py


def _cfg(tmp_path: Path, py: Path) -> Path:
    return write_profile(tmp_path, command=[str(py), "-m", "sglang.launch_server", "--tp", "8",
                                            "--enable-torch-symm-mem"], log_dir=tmp_path / "logs", timeout=30)


def test_preflight_predicts_the_keyerror_and_strict_blocks(tmp_path: Path, venv_with_sandbox: Path) -> None:
    sup = Supervisor(load_profile(_cfg(tmp_path, venv_with_sandbox)))
    prediction, note = sup.preflight(12)
    assert note is None and prediction is not None and getattr(prediction, "will_crash", False)
    with pytest.raises(PreflightBlocked, match="KeyError: 12"):
        sup.relaunch(capability=12, block_on_prediction=True)
    assert sup.current() is None and not (tmp_path / "logs").exists()
    assert sup.preflight(9)[0] is None  # Hopper is in the tables


def test_launch_warns_then_launches(tmp_path: Path, venv_with_sandbox: Path) -> None:
    sup = Supervisor(load_profile(_cfg(tmp_path, venv_with_sandbox)))
    result = sup.relaunch(capability=12)
    assert any("KeyError: 12" in w and "symmtui patch apply" in w for w in result.warnings)
    assert sup.wait_exit(30) == 1  # the stand-in package has no launch_server: it exits at once
    sup.stop()


def test_cli_strict_preflight_exit_3(tmp_path: Path, venv_with_sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no GPU here: the capability comes from the NVML stand-in (8x RTX PRO 6000, SM120)
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", "rtx-pro-6000-x8-pcie")
    res = run_cli("launch", "--config", str(_cfg(tmp_path, venv_with_sandbox)), "--strict-preflight")
    assert res.returncode == 3, res.stdout + res.stderr
    assert "not launching: this launch will crash with KeyError: 12" in res.stderr
    assert not (tmp_path / "logs").exists()


def test_strict_preflight_refuses_before_stopping_the_running_server(tmp_path: Path) -> None:
    """The profile's own PYTHONPATH decides which sglang runs; a refused relaunch leaves the server running."""
    from symmtui.demo.sandbox import write_sandbox
    from symmtui.proc import proctree

    box = write_sandbox(tmp_path / "box")
    (box.package / "launch_server.py").write_text("import time\ntime.sleep(120)\n")  # a server that loads
    cfg = write_profile(tmp_path, command=[sys.executable, "-m", "sglang.launch_server", "--tp", "8",
                                           "--enable-torch-symm-mem"],
                        log_dir=tmp_path / "logs", env={"PYTHONPATH": str(box.site)}, grace=1)
    sup = Supervisor(load_profile(cfg))
    assert sup.preflight(12)[0] is not None  # found through the profile's PYTHONPATH, not this interpreter's
    running = sup.relaunch(capability=9).record  # Hopper: in the tables, no prediction
    assert running.argv[0] == sys.executable
    with pytest.raises(PreflightBlocked, match="KeyError: 12"):
        sup.relaunch(capability=12, block_on_prediction=True)
    assert proctree.is_same(running.pid, running.create_time) and sup.current() == running
    report = sup.stop()
    assert [p.pid for p in report.found] == [running.pid] and report.clean


def test_relaunch_progress_says_what_the_preflight_found(tmp_path: Path, venv_with_sandbox: Path) -> None:
    from symmtui.launch.report import Progress, Step

    sup = Supervisor(load_profile(_cfg(tmp_path, venv_with_sandbox)))
    seen: list[Progress] = []
    sup.relaunch(seen.append, capability=9)  # Hopper is in the tables: nothing to predict
    said = [p.message for p in seen if p.step is Step.PREFLIGHT]
    assert said[0] == "checking the SM120 patch state"
    assert said[-1] == "no KeyError crash predicted for this launch"
    sup.wait_exit(30)
    sup.stop()
