"""The one redaction: token shapes, auth headers, URL passwords, secret-named assignments, env and argv."""

from __future__ import annotations

import pytest

from symmtui.redact import MASK, redact, redact_argv, redact_env

HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
SK = "sk-" + "proj-0123456789abcdefABCDEF"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"HF_TOKEN={HF}", HF),
        (f"using token {HF} from the cache", HF),
        ("Authorization: Bearer abc.def-ghi_0123456789", "abc.def-ghi_0123456789"),
        ("authorization=Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("curl -H 'Authorization: Bearer tok9876543210xyz' http://x", "tok9876543210xyz"),
        ("proxy https://alice:s3cr3tpw@proxy.example:3128", "s3cr3tpw"),
        ("server_args=ServerArgs(model_path='m', api_key='plain-secret-value', tp_size=8)", "plain-secret-value"),
        ('{"client_secret": "zzzyyyxxx"}', "zzzyyyxxx"),
        ("--api-key=hunter2hunter2", "hunter2hunter2"),
        ("--api-key hunter2hunter2 --port 30000", "hunter2hunter2"),
        (f"{SK} leaked", SK),
        ("ghp_" + "a" * 36, "ghp_" + "a" * 36),
        ("AWS key AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ],
)
def test_a_secret_is_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert MASK in out


@pytest.mark.parametrize(
    "text",
    [
        "KeyError: 12",
        "[2025-10-12 08:00:01 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00",
        "KV Cache is allocated. #tokens: 612352, KV size: 29.83 GB",
        "max_total_num_tokens=612352, chunked_prefill_size=8192",
        "server_args=ServerArgs(api_key=None, tokenizer_path='/models/GLM', hf_token=None)",
        "the cache key is computed from the model name",
        "File \"/sglang/srt/distributed/device_communicators/torch_symm_mem.py\", line 83",
    ],
)
def test_ordinary_log_text_is_kept(text: str) -> None:
    assert redact(text) == text


def test_env_values_of_secret_names_are_masked_whole() -> None:
    assert redact_env("HF_TOKEN", HF) == MASK
    assert redact_env("SGLANG_API_KEY", "short") == MASK
    assert redact_env("AWS_SECRET_ACCESS_KEY", "abc") == MASK
    assert redact_env("NCCL_DEBUG", "INFO") == "INFO"
    assert redact_env("CUDA_VISIBLE_DEVICES", "0,1") == "0,1"
    assert redact_env("VLLM_EXTRA", f"x {HF}") == f"x {MASK}"


def test_argv_flag_values_are_masked() -> None:
    argv = ["python", "-m", "sglang.launch_server", "--api-key", "hunter2", "--hf-token=abc",
            "--tp", "8", "--token", "--port", "30000", f"--model={HF}"]
    out = redact_argv(argv)
    assert out[:3] == ("python", "-m", "sglang.launch_server")
    assert out[3:5] == ("--api-key", MASK)
    assert out[5] == f"--hf-token={MASK}"
    assert out[6:8] == ("--tp", "8")
    assert out[8:11] == ("--token", "--port", "30000")  # a flag with no value masks nothing after it
    assert HF not in " ".join(out)
