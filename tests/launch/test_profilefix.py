"""A catalogue action applied to a real profile file: the TOML diff, the atomic write, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from symmtui.errors import UserError
from symmtui.judge.rules import Action
from symmtui.launch.profile import load_profile
from symmtui.launch.profilefix import apply, plan, plan_restore

FLAG = Action("flag_add", "relaunch with --disable-custom-all-reduce", flag="--disable-custom-all-reduce")
VALUE = Action("flag_add", "lower it", flag="--max-model-len", value="3664")
ENV = Action("env", "turn JIT DeepGEMM off", env="SGLANG_ENABLE_JIT_DEEPGEMM", value="0")


def _profile(tmp_path: Path, command: str, extra: str = "") -> Path:
    p = tmp_path / "symmtui.toml"
    p.write_text(f'# my server\n[server]\ncommand = {command}\nlog_dir = "logs"  # keep\n{extra}\n[rules]\nready = ["up"]\n')
    return p


@pytest.mark.parametrize("command", [
    '["python", "-m", "vllm.entrypoints.openai.api_server", "--max-model-len", "8192"]',
    '"python -m vllm.entrypoints.openai.api_server --max-model-len 8192"',
    '[\n  "python", "-m", "vllm.entrypoints.openai.api_server",\n  "--max-model-len", "8192",\n]',
])
def test_a_flag_with_a_value_replaces_the_old_setting(tmp_path: Path, command: str) -> None:
    p = _profile(tmp_path, command)
    fix = plan(p, VALUE)
    assert fix.changed and "--max-model-len" in fix.diff and "3664" in fix.diff
    apply(fix)
    prof = load_profile(p)
    assert prof.argv is not None and list(prof.argv[-2:]) == ["--max-model-len", "3664"]
    assert prof.argv.count("--max-model-len") == 1
    text = p.read_text()
    assert text.startswith("# my server\n") and 'log_dir = "logs"  # keep' in text and 'ready = ["up"]' in text


def test_a_bare_flag_is_added_once(tmp_path: Path) -> None:
    p = _profile(tmp_path, '["python", "-m", "sglang.launch_server", "--tp", "4"]')
    apply(plan(p, FLAG))
    assert not plan(p, FLAG).changed  # asking again changes nothing
    argv = load_profile(p).argv
    assert argv is not None and argv[-1] == "--disable-custom-all-reduce" and argv.count("--disable-custom-all-reduce") == 1


def test_an_env_action_adds_or_replaces_the_variable(tmp_path: Path) -> None:
    p = _profile(tmp_path, '["python", "-m", "sglang.launch_server"]')
    apply(plan(p, ENV))
    assert load_profile(p).env["SGLANG_ENABLE_JIT_DEEPGEMM"] == "0"
    p2 = _profile(tmp_path, '["python", "-m", "sglang.launch_server"]', '\n[server.env]\nSGLANG_ENABLE_JIT_DEEPGEMM = "1"\nHF_HOME = "/h"\n')
    fix = plan(p2, ENV)
    assert "-SGLANG_ENABLE_JIT_DEEPGEMM = \"1\"" in fix.diff and "+SGLANG_ENABLE_JIT_DEEPGEMM = \"0\"" in fix.diff
    apply(fix)
    prof = load_profile(p2)
    assert prof.env == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0", "HF_HOME": "/h"}


def test_refusals_touch_nothing(tmp_path: Path) -> None:
    p = _profile(tmp_path, '"python -m sglang.launch_server > out.log 2>&1"', "shell = true")
    before = p.read_text()
    with pytest.raises(UserError, match="shell"):
        plan(p, FLAG)
    with pytest.raises(UserError, match="not a profile change"):
        plan(p, Action("upgrade", "upgrade NCCL", package="nccl", version="2.27"))
    with pytest.raises(UserError, match="your value"):
        plan(p, Action("env", "set a token", env="HF_TOKEN", value="<your token>"))
    assert p.read_text() == before


def test_a_profile_edited_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    p = _profile(tmp_path, '["python", "-m", "sglang.launch_server"]')
    fix = plan(p, FLAG)
    p.write_text(p.read_text() + "# edited by hand\n")
    with pytest.raises(UserError, match="changed since"):
        apply(fix)
    assert "# edited by hand" in p.read_text() and "--disable-custom-all-reduce" not in p.read_text()


def test_back_to_what_worked_puts_every_culprit_back_in_one_change(tmp_path: Path) -> None:
    p = _profile(tmp_path, '["python", "-m", "sglang.launch_server", "--tp", "8", "--enable-torch-symm-mem", '
                 '"--chunked-prefill-size", "4096"]',
                 '\n[server.env]\nNCCL_P2P_LEVEL = "SYS"\nNCCL_ALGO = "Tree"\nHF_HOME = "/h"\n')
    actions = (Action("flag_remove", "remove --enable-torch-symm-mem", flag="--enable-torch-symm-mem"),
               Action("flag_add", "give --chunked-prefill-size 8192 again", flag="--chunked-prefill-size", value="8192"),
               Action("env", "set NCCL_P2P_LEVEL=NVL again", env="NCCL_P2P_LEVEL", value="NVL"),
               Action("env_unset", "unset NCCL_ALGO", env="NCCL_ALGO"))
    fix = plan_restore(p, actions, "the last READY launch, 2026-11-30 14:02 (20 h ago)")
    assert fix.title == "Go back to what worked?" and fix.summary == "back to what worked"
    assert fix.note.splitlines() == ["Back to what worked: the last READY launch, 2026-11-30 14:02 (20 h ago)",
                                     *(f"  {a.text}" for a in actions)]
    assert '-NCCL_ALGO = "Tree"' in fix.diff and '+NCCL_P2P_LEVEL = "NVL"' in fix.diff
    apply(fix)
    prof = load_profile(p)
    assert prof.argv == ("python", "-m", "sglang.launch_server", "--tp", "8", "--chunked-prefill-size", "8192")
    assert prof.env == {"NCCL_P2P_LEVEL": "NVL", "HF_HOME": "/h"}
    assert 'ready = ["up"]' in p.read_text()


def test_back_to_what_worked_refuses_what_the_profile_does_not_say(tmp_path: Path) -> None:
    p = _profile(tmp_path, '["python", "-m", "sglang.launch_server"]')
    before = p.read_text()
    with pytest.raises(UserError, match="NCCL_ALGO is not set by .*unset it where you start symmtui"):
        plan_restore(p, (Action("env_unset", "unset NCCL_ALGO", env="NCCL_ALGO"),), "the last READY launch")
    with pytest.raises(UserError, match="nothing to put back"):
        plan_restore(p, (Action("patch", "patch it", patch="sm120"),), "the last READY launch")
    assert p.read_text() == before
