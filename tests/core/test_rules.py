"""The rule table: every rule matches its real line shape, priorities, user rules, the byte prefilter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symmtui.core.rules import BUILTIN_RULES, ByteScanner, Kind, RuleSet, required_literal, strip_ansi
from symmtui.errors import UserError

# rule id -> a real-shaped line it must name (first match in table order)
EXAMPLES: dict[str, str] = {
    "sglang_ready": "[2026-11-29 09:48:04] The server is fired up and ready to roll!",
    "app_startup_complete": "INFO:     Application startup complete.",
    "traceback": "[2026-11-29 09:40:17 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "hit_exception": "[2026-11-29 09:40:17 TP3] TpModelWorker hit an exception: boom",
    "no_kernel_image": "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    "cuda_oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "nccl_watchdog": "[rank3]:[E1029 06:48:05.1 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
    "nccl_error": "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error",
    "cuda_error": "RuntimeError: CUDA error: an illegal memory access was encountered",
    "address_in_use": "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
    "segfault": "Segmentation fault (core dumped)",
    "fatal_python": "Fatal Python error: Aborted",
    "core_dumped": "Aborted (core dumped)",
    "killed": "/bin/sh: line 1: 48213 Killed                  python -m sglang.launch_server",
    "sigquit": "[2026-11-29 09:40:18] Received sigquit from a child process. It usually means the child failed.",
    "key_error": "KeyError: 12",
    "runtime_error": "RuntimeError: Expected all tensors to be on the same device",
    "capability_unsupported": "[2026-11-29 09:40:12 TP0] TorchSymmMemCommunicator: Device capability 12 not supported, communicator is not available.",
    "multicast_unsupported": "torch symmetric memory multicast operations are not supported.",
    "server_args": "[2026-11-29 09:40:03] server_args=ServerArgs(model_path='/models/x', tp_size=8)",
    "vllm_start": "INFO 10-29 06:48:05 [api_server.py:1024] vLLM API server version 0.11.0",
    "init_dist_begin": "[2026-11-29 09:40:09 TP0] Init torch distributed begin.",
    "init_dist_end": "[2026-11-29 09:40:12 TP0] Init torch distributed ends. mem usage=0.42 GB",
    "load_weight_begin": "[2026-11-29 09:40:13 TP0] Load weight begin. avail mem=93.21 GB",
    "load_weight_end": "[2026-11-29 09:47:23 TP0] Load weight end. type=X, dtype=torch.bfloat16, avail mem=40.87 GB",
    "vllm_load_begin": "(Worker_TP0 pid=11) INFO 10-29 06:48:05 [gpu_model_runner.py:1] Starting to load model /m...",
    "vllm_load_end": "(Worker_TP0 pid=11) INFO 10-29 06:50:05 [gpu_model_runner.py:2] Model loading took 40.1 GiB and 120 s",
    "shards_progress": "Loading safetensors checkpoint shards:  45% Completed | 50/111 [03:12<04:01,  3.95s/it]",
    "kv_cache": "[2026-11-29 09:47:25 TP0] KV Cache is allocated. #tokens: 612352, KV size: 29.83 GB",
    "memory_pool_end": "[2026-11-29 09:47:25 TP0] Memory pool end. avail mem=9.61 GB",
    "cuda_graph_begin": "[2026-11-29 09:47:26 TP0] Capture cuda graph begin. This can take up to several minutes.",
    "cuda_graph_end": "[2026-11-29 09:47:58 TP0] Capture cuda graph end. Time elapsed: 31.84 s.",
    "cuda_graph_progress": "Capturing batches (bs=124 avail_mem=9.44 GB):  26%|##      | 6/23 [00:06<00:17,  1.05it/s]",
    "uvicorn_started": "[2026-11-29 09:48:01] INFO:     Started server process [48213]",
    "uvicorn_running": "[2026-11-29 09:48:01] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
}

ORDINARY = [
    "[2026-11-29 09:50:01 TP0] Decode batch. #running-req: 12, #token: 40321, token usage: 0.07, cuda graph: True, gen throughput (token/s): 812.33, #queue-req: 0,",
    "[2026-11-29 09:50:01 TP0] Prefill batch. #new-seq: 1, #new-token: 1024, #cached-token: 0, token usage: 0.07,",
    '[2026-11-29 09:50:01] INFO:     127.0.0.1:51240 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "",
    "   ",
]


def test_every_builtin_rule_has_an_example() -> None:
    assert set(EXAMPLES) == {r.id for r in BUILTIN_RULES}


@pytest.mark.parametrize("rule_id", sorted(EXAMPLES))
def test_example_names_its_rule(rule_id: str) -> None:
    m = RuleSet().match(EXAMPLES[rule_id])
    assert m is not None and m.rule.id == rule_id


@pytest.mark.parametrize("rule_id", sorted(EXAMPLES))
def test_byte_prefilter_admits_every_example(rule_id: str) -> None:
    line = EXAMPLES[rule_id]
    filler = "\n".join(ORDINARY[:3]) + "\n"
    buf = (filler * 50 + line + "\n" + filler * 50).encode()
    # Tune on the filler so rare-byte anchors and whole-literal finds both get exercised.
    scanner = ByteScanner(RuleSet(), (filler * 200).encode())
    starts = scanner.candidate_starts(buf, len(buf))
    target = buf.index(line.encode())
    assert target in starts


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_lines_match_nothing(line: str) -> None:
    assert RuleSet().match(line) is None


def test_progress_values() -> None:
    rs = RuleSet()
    m = rs.match(EXAMPLES["shards_progress"])
    assert m is not None and m.progress() == (50, 111)
    m = rs.match(EXAMPLES["cuda_graph_progress"])
    assert m is not None and m.progress() == (6, 23)
    m = rs.match(EXAMPLES["load_weight_begin"])
    assert m is not None and m.progress() is None


def test_specific_crash_beats_generic() -> None:
    m = RuleSet().match("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    assert m is not None and m.rule.id == "no_kernel_image"
    m = RuleSet().match("RuntimeError: CUDA error: device-side assert triggered")
    assert m is not None and m.rule.id == "cuda_error"


def test_killed_needs_a_word_boundary() -> None:
    assert RuleSet().match("Killed") is not None
    assert RuleSet().match("UnKilledThing happened") is None


def test_ansi_is_stripped_for_matching() -> None:
    colored = "\x1b[31mKeyError: 12\x1b[0m"
    assert strip_ansi(colored) == "KeyError: 12"
    assert RuleSet().match(strip_ansi(colored)) is not None


def test_user_rules_come_first_and_are_matched() -> None:
    rs = RuleSet().with_user(ready=[r"my server is up \d+"], crash=["boom!"])
    m = rs.match("my server is up 42")
    assert m is not None and m.rule.kind is Kind.READY and m.rule.user
    m = rs.match("a boom! happened")
    assert m is not None and m.rule.kind is Kind.CRASH
    # built-ins still work
    assert rs.match(EXAMPLES["sglang_ready"]) is not None


def test_user_rule_without_a_literal_still_matches_in_both_paths() -> None:
    rs = RuleSet().with_user(ready=[r"^\d+\s+ok$"])
    assert rs.match("200 ok") is not None
    buf = b"foo\n200 ok\nbar\n"
    starts = ByteScanner(rs, buf).candidate_starts(buf, len(buf))
    assert 4 in starts


@pytest.mark.parametrize("pattern", ["a(", "[unclosed", "*start", "(?P<x>a)(?P<x>b)"])
def test_bad_user_regex_is_a_user_error_naming_it(pattern: str) -> None:
    with pytest.raises(UserError) as err:
        RuleSet().with_user(crash=[pattern])
    msg = str(err.value)
    assert repr(pattern) in msg and "crash pattern" in msg
    assert err.value.exit_code == 2


def test_empty_matching_user_regex_is_refused() -> None:
    with pytest.raises(UserError, match="matches every line"):
        RuleSet().with_user(ready=["x*"])


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [("foo bar", "foo bar"), (r"ready\s+now", "ready"), (r"(abc|def)xyz", "xyz"), ("a.b", None),
     (r"(?:hello) world", "hello world"), (r"x(?i:abc)yz", None), (r"(ab|cd)", None)],
)
def test_required_literal(pattern: str, literal: str | None) -> None:
    assert required_literal(pattern) == literal


def test_case_insensitive_user_rule_is_not_anchored_on_a_literal() -> None:
    rs = RuleSet().with_user(ready=[r"(?i)server up"])
    assert rs.match("SERVER UP") is not None
    buf = b"x\nSERVER UP\n"
    assert 2 in ByteScanner(rs, buf).candidate_starts(buf, len(buf))


_fragments = st.sampled_from(
    [lit for r in BUILTIN_RULES for lit in r.literals] + ["Traceback", "Error", "\x1b[0m", "é", "\t", " ", "|", "12/34"]
)
_text = st.lists(st.one_of(_fragments, st.text(max_size=12)), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, min_size=1, max_size=20))
def test_prefilter_never_drops_a_matching_line(lines: list[str]) -> None:
    """Soundness: every line that some rule matches is among the byte scanner's candidates."""
    rs = RuleSet()
    clean = [ln.replace("\n", " ").replace("\r", " ") for ln in lines]
    buf = ("\n".join(clean) + "\n").encode("utf-8", "surrogatepass")
    starts = set(ByteScanner(rs, buf).candidate_starts(buf, len(buf)))
    offset = 0
    for ln in clean:
        if rs.match(ln) is not None:
            assert offset in starts, ln
        offset += len(ln.encode("utf-8", "surrogatepass")) + 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_match_never_raises(text: str) -> None:
    rs = RuleSet()
    first = rs.match(text)
    every = rs.match_all(text)
    assert (first.rule.id if first else None) == (every[0].rule.id if every else None)
    assert all(m.match.re.search(text) for m in every)
