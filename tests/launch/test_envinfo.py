"""Environment capture: versions asked of the server's interpreter (isolated), GPUs from NVML, env redacted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.standin import load_standin
from symmtui.launch.envinfo import PRESENT, EnvInfo, ServerCommand, capture
from symmtui.redact import MASK

HF = "hf_" + "PlantedTokenNeverShown0123456789"

TORCH_INIT = """
__version__ = "2.9.1+cu128"
class version:
    cuda = "12.8"
class _Nccl:
    @staticmethod
    def version():
        return (2, 27, 3)
class cuda:
    nccl = _Nccl
"""


def _site(tmp: Path) -> Path:
    """A directory the server's PYTHONPATH names, holding a torch and an sglang (with its dist-info)."""
    site = tmp / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(TORCH_INIT)
    (site / "sglang").mkdir()
    (site / "sglang" / "__init__.py").write_text("raise SystemExit('sglang must not be imported')\n")
    (site / "sglang-0.5.6.post1.dist-info").mkdir()
    (site / "sglang-0.5.6.post1.dist-info" / "METADATA").write_text("Name: sglang\nVersion: 0.5.6.post1\n\n")
    return site


def test_capture_asks_the_servers_interpreter_and_redacts(tmp_path: Path) -> None:
    site = _site(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "HF_TOKEN": HF, "HF_HOME": "/models/hf",
           "NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_API_KEY": "sglang-secret-key",
           "HOME": "/home/me", "OPENAI_API_KEY": "not-kept-at-all"}
    argv = (sys.executable, "-m", "sglang.launch_server", "--tp", "2", "--api-key", "flag-secret-value")
    nvml = Nvml(load_standin("rtx-pro-6000-x8-pcie"))
    info = capture(ServerCommand(argv, env, tmp_path, sys.executable), nvml=nvml)

    assert info.version("sglang") == "0.5.6.post1"
    assert info.version("vllm") is None  # not installed there
    assert info.version("torch") is not None
    assert (info.nccl, info.torch_cuda) == ("2.27.3", "12.8")
    assert info.python == sys.executable and info.python_version
    assert "torch" not in sys.modules and "sglang" not in sys.modules  # nothing imported here
    assert len(info.gpus) == 8 and info.gpus[0].capability == "12.0" and info.capability == "12.0"
    assert info.driver and info.cuda_driver
    env_out = dict(info.env)
    assert env_out["NCCL_DEBUG"] == "INFO" and env_out["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env_out["HF_TOKEN"] == PRESENT and env_out["HF_HOME"] == PRESENT
    assert env_out["SGLANG_API_KEY"] == MASK
    assert "HOME" not in env_out and "OPENAI_API_KEY" not in env_out
    assert info.argv is not None and info.argv[-1] == MASK
    text = json.dumps(info.to_json())
    for secret in (HF, "sglang-secret-key", "flag-secret-value", "not-kept-at-all"):
        assert secret not in text
    assert EnvInfo.from_json(json.loads(text)) == info


def test_capture_without_a_python_says_why(tmp_path: Path) -> None:
    info = capture(ServerCommand(("/bin/sh", "-c", "sleep 1"), {"NCCL_P2P_DISABLE": "1"}, tmp_path, None))
    assert info.versions == () and info.nccl is None
    assert any("python is not known" in n for n in info.notes)
    assert any("GPUs not read" in n for n in info.notes)
    assert dict(info.env) == {"NCCL_P2P_DISABLE": "1"}
    none = capture(None)
    assert none.argv is None and any("server command not known" in n for n in none.notes)


def test_a_torch_that_fails_to_import_is_a_note(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "torch" / "__init__.py").write_text("raise ImportError('libcudart.so.12: cannot open')\n")
    argv = (sys.executable, "-m", "sglang.launch_server")
    info = capture(ServerCommand(argv, {"PYTHONPATH": str(site)}, tmp_path, sys.executable))
    assert info.version("sglang") == "0.5.6.post1" and info.nccl is None
    assert any("NCCL version not read" in n and "libcudart" in n for n in info.notes)


def test_from_pid_reads_our_own_process() -> None:
    import os

    cmd = ServerCommand.from_pid(os.getpid())
    assert cmd.argv is not None and cmd.python is not None
    assert cmd.env.get("PATH") == os.environ.get("PATH")


def test_from_json_refuses_a_wrong_shape() -> None:
    import pytest

    with pytest.raises(ValueError, match="environment.gpus"):
        EnvInfo.from_json({"gpus": "x"})
    planted = EnvInfo.from_json({"env": {"HF_TOKEN": HF}, "argv": ["x", "--api-key", "abcdefgh"]})
    assert HF not in json.dumps(planted.to_json()) and "abcdefgh" not in json.dumps(planted.to_json())
