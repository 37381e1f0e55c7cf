"""The catalogue: shipped entries are sourced and typed, user entries load, bad ones are one line; matching discipline."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from symmtui.bringup.scan import scan_file
from symmtui.judge.diagnose import diagnose
from symmtui.judge.events import EventBuilder
from symmtui.judge.readiness import Readiness, ReadinessConfig, State
from symmtui.judge.rules import ACTION_TYPES, Kind, RuleSet, user_ruleset
from symmtui.launch.profile import load_profile
from symmtui.tables.catalogue import (
    CatalogueError,
    builtin_entries,
    load_file,
    parse_text,
    user_file,
)

from .engine_kit import READY_LOG, env, symmtui_cmd

SOURCE = re.compile(r"[\w.-]+/[\w.-]+#\d+")


def test_at_least_thirty_sourced_entries_with_typed_actions_sm120_first() -> None:
    diagnosing = [r for r in builtin_entries() if r.cause]
    assert len({r.id for r in diagnosing}) >= 30
    for r in diagnosing:
        assert r.source and all(SOURCE.fullmatch(s) for s in r.source), r.id
        assert r.action is not None and r.action.type in ACTION_TYPES and r.action.text, r.id
    catalogue = [r.id for r in builtin_entries() if r.origin.startswith("symmtui/catalogue/")]
    assert catalogue[0] == "sm120-symm-mem-keyerror" and "deepgemm-sm120" in catalogue[:8]
    # the common classes the issue names are all there
    ids = {r.id for r in diagnosing}
    assert {"cuda-oom-load", "cuda-oom-kv-cache", "kv-cache-too-small", "port-in-use", "hf-gated-401", "nccl-timeout",
            "nccl-unhandled-system-error", "illegal-memory-access", "unsupported-compute-capability"} <= ids


def test_every_shipped_line_entry_has_a_prefilter_literal() -> None:
    """scan's speed depends on it: a line entry with no literal is a regex over every byte."""
    assert [rule.id for rule, _ in RuleSet().unanchored] == []


def test_flag_and_env_actions_carry_what_a_front_end_applies() -> None:
    rs = RuleSet()
    line = ("ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be "
            "stored in KV cache (3664). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.")  # vllm-project/vllm#2418
    b = EventBuilder(rs)
    ev = (b.feed_plain(1, line) + b.flush())[0]
    d = diagnose(ev)
    assert d is not None and d.id == "kv-cache-too-small" and d.fix is not None
    assert (d.fix.type, d.fix.flag, d.fix.value) == ("flag_add", "--max-model-len", "3664")
    assert "3664" in d.cause and d.intent == "relaunch"


def test_user_file_entry_comes_first_and_names_the_diagnosis(tmp_path: Path) -> None:
    path = user_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        '[[entry]]\nid = "our-nfs-stall"\nkind = "crash"\npatterns = [\'Stale file handle\']\n'
        'cause = "the model share on NFS went away"\n'
        'action = { type = "env", env = "HF_HUB_OFFLINE", value = "1", text = "remount /models, then relaunch" }\n'
    )
    rs = user_ruleset()
    b = EventBuilder(rs)
    ev = (b.feed_plain(1, "OSError: [Errno 116] Stale file handle: '/models/x'") + b.flush())[0]
    d = diagnose(ev)
    assert d is not None and d.id == "our-nfs-stall" and d.fix is not None and d.fix.env == "HF_HUB_OFFLINE"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[[entry]]\nid = "x1"\nkind = "crash"\npatterns = ["a("]\ncause = "c"\naction = { type = "investigate", text = "t" }\n', "patterns[0]"),
        ('[[entry]]\nid = "x1"\nkind = "oops"\npatterns = ["abc"]\n', "kind"),
        ('[[entry]]\nid = "x1"\nkind = "crash"\npatterns = ["abc"]\ncause = "c {nope}"\naction = { type = "investigate", text = "t" }\n', "cause"),
        ('[[entry]]\nid = "x1"\nkind = "crash"\npatterns = ["abc"]\ncause = "c"\naction = { type = "env", text = "t" }\n', "action.env"),
        ('[[entry]]\nid = "x1"\nkind = "crash"\npatterns = ["abc"]\ncolour = "red"\n', "colour"),
        ('[[entry]]\nid = "x1"\nkind = "crash"\npatterns = ["x*"]\n', "patterns[0]"),
        ('[[entry]]\nid = "x1"\nkind = "crash"\npatterns = ["abc"]\ncause = "c"\n', "action"),
        ("[[entry]\n", "toml"),
    ],
)
def test_a_bad_entry_is_one_line_naming_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "catalogue.toml"
    path.write_text(text)
    with pytest.raises(CatalogueError) as err:
        load_file(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and f"{key}:" in msg, msg


def test_the_cli_refuses_a_bad_user_file_in_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    (cfg / "symmtui").mkdir(parents=True)
    (cfg / "symmtui" / "catalogue.toml").write_text('[[entry]]\nid = "x1"\nkind = "crash"\npatterns = ["("]\n')
    r = subprocess.run(symmtui_cmd("scan", str(READY_LOG)), capture_output=True, text=True, timeout=60,
                       env={**env(), "XDG_CONFIG_HOME": str(cfg)})
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("symmtui: error: catalogue ") and "patterns[0]" in lines[0]


def test_a_profile_entry_is_checked_and_used(tmp_path: Path) -> None:
    prof = tmp_path / "symmtui.toml"
    prof.write_text(
        '[server]\nlog = "server.log"\n[[rules.entry]]\nid = "site-quota"\nkind = "crash"\n'
        'patterns = [\'Disk quota exceeded\']\ncause = "the scratch quota is full"\n'
        'action = { type = "investigate", text = "clean /scratch" }\n'
    )
    p = load_profile(prof)
    assert [e.id for e in p.entries] == ["site-quota"]
    prof.write_text('[server]\nlog = "server.log"\n[[rules.entry]]\nid = "site-quota"\nkind = "crash"\n')
    with pytest.raises(CatalogueError, match=r"rules\.entry\[0\].*patterns: is required"):
        load_profile(prof)


def test_shipped_text_parses_the_same_as_loaded() -> None:
    import importlib.resources as res

    text = (res.files("symmtui.catalogue") / "10-sm120.toml").read_text()
    assert [r.id for r in parse_text(text, "x")] == [r.id for r in builtin_entries() if r.origin.endswith("10-sm120.toml")]


# ---- matching discipline (issue 12): markers match the message part, not repr'd values


def _verdict(lines: list[str]) -> State:
    b = EventBuilder()
    r = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
    for i, ln in enumerate(lines, 1):
        for ev in b.feed_plain(i, ln):
            r.feed(ev, 0.0)
    for ev in b.flush():
        r.feed(ev, 0.0)
    return r.snapshot(0.0).state


def test_a_marker_inside_a_quoted_argument_is_not_ready() -> None:
    line = ("[2026-11-29 09:40:03] server_args=ServerArgs(model_path='/m/x', served_model_name='The server is fired "
            "up and ready to roll!', chat_template=\"Application startup complete. POST /v1/x HTTP/1.1\\\" 200\", tp_size=8)")
    assert _verdict([line]) is State.STARTING
    assert RuleSet().match(line) is not None and RuleSet().match(line).rule.id == "server-args"  # type: ignore[union-attr]
    vllm = "INFO 10-29 06:48:05 [utils.py:1] non-default args: {'model': '/m', 'served_model_name': ['Traceback (most recent call last):', 'KeyError: 12']}"
    assert _verdict([vllm]) in (State.WAITING, State.STARTING)


@pytest.mark.parametrize("odd", [b"\x00", b"\x1b[1m", b"\x00\x00\x1b[0m"])
def test_scan_and_wait_judge_a_marker_with_odd_bytes_inside_alike(tmp_path: Path, odd: bytes) -> None:
    log = tmp_path / "server.log"
    marker = b"The server is fi" + odd + b"red up and ready to roll!"
    log.write_bytes(b"[2026-11-29 09:40:03 TP0] Load weight begin. avail mem=93.21 GB\n[2026-11-29 09:48:04] " + marker + b"\n")
    assert scan_file(log).verdict == "ready"
    r = subprocess.run(symmtui_cmd("wait", "--log", str(log), "--timeout", "20", "--no-record"), capture_output=True, text=True,
                       timeout=60, env=env())
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_source_line_in_a_traceback_is_code_not_the_message() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/pynccl_wrapper.py", line 282, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ]
    b = EventBuilder()
    events = [e for i, ln in enumerate(lines, 1) for e in b.feed_plain(i, ln)] + b.flush()
    crashes = [e for e in events if e.kind is Kind.CRASH]
    assert len(crashes) == 1 and crashes[0].summary.startswith("RuntimeError: NCCL error: unhandled system error")
    assert crashes[0].diagnosis == "nccl-unhandled-system-error"
    # the source line alone, outside a traceback, is no crash either
    assert EventBuilder().feed_plain(1, lines[2]) == []


def test_nccl_ras_bind_warning_is_harmless_and_ports_come_from_the_message() -> None:
    ras = "node:123:456 [0] ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use"
    assert _verdict(["[2026-11-29 09:40:13 TP0] Load weight begin. avail mem=93.21 GB", ras]) is State.STARTING
    b = EventBuilder()
    ev = (b.feed_plain(1, "ERROR 01-02 03:04:05 [launcher.py:88] OSError: [Errno 98] Address already in use") + b.flush())[0]
    d = diagnose(ev)
    assert d is not None and "port 88" not in d.cause and "the server's port" in d.cause


def test_capability_with_a_decimal_is_the_same_warning() -> None:
    line = "[2026-11-29 09:40:12 TP0] TorchSymmMemCommunicator: Device capability 12.0 not supported, communicator is not available."
    ev = EventBuilder().feed_plain(1, line)[0]
    d = diagnose(ev)
    assert ev.kind is Kind.WARNING and d is not None and d.id == "symm-mem-capability-unsupported" and "12" in d.cause


def test_scan_json_carries_the_entry_id_and_the_typed_fix(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("Traceback (most recent call last):\n  File \"/x/deep_gemm/jit.py\", line 3, in build\n    a[k]\n"
                   "KeyError: '120a'\n")
    r = subprocess.run(symmtui_cmd("scan", "--json", str(log)), capture_output=True, text=True, timeout=60, env=env())
    doc = json.loads(r.stdout)
    diag = doc["cause"]["diagnosis"]
    assert diag["id"] == "deepgemm-sm120" and diag["fix"]["env"] == "SGLANG_ENABLE_JIT_DEEPGEMM" and diag["fix"]["value"] == "0"
    assert os.path.basename(doc["path"]) == "x.log"
