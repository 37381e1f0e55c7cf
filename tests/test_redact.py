"""The one redaction: token shapes, auth headers, URL passwords, secret-named assignments, env and argv;
hypothesis properties for the shapes that leaked and for line breaks."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
        # colour codes between the name and its value (a hostile run: they reached the bundle and the report)
        ("auth failed \x1b[1mpassword=\x1b[0mansihook0031", "ansihook0031"),
        ("\x1b[1mAuthorization: Bearer\x1b[0m ansibearer0032", "ansibearer0032"),
        ("pass\x1b[0mword=ansisplit0023", "ansisplit0023"),
        ("Cookie: session=cookie0019; theme=dark", "cookie0019"),
        ("headers={'Set-Cookie': 'sid=cookiehook0033'}", "cookiehook0033"),
        ("-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkq -----END PRIVATE KEY-----", "MIIEvQIBADANBgkq"),
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
        "\x1b[32mINFO\x1b[0m:     Application startup complete.",  # colours kept where nothing is masked
        "cookies were set for 3 users",
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


# ---- properties: generated secrets in the shapes that leaked, and line breaks ------------------------

LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_PIECE = string.ascii_letters + string.digits + "!$%^*+-_.~:@#"
piece = st.text(_PIECE, min_size=8, max_size=20)
words = st.lists(piece, min_size=1, max_size=5)
url_password = st.text(_PIECE, min_size=8, max_size=30)
bearer = st.text(string.ascii_letters + string.digits + "._~+/=-", min_size=8, max_size=40)
hf = st.text(string.ascii_letters + string.digits, min_size=16, max_size=40).map(lambda t: "hf_" + t)

# (template, strategy for the secret, pieces the secret is made of): {} is where the secret goes
SHAPES = {
    "json value with spaces": ('{{"password": "{}", "user": "bob"}}', words.map(" ".join)),
    "json value, escaped key": ('{{"body": "{{\\"api_key\\": \\"{}\\"}}"}}', words.map(" ".join)),
    "single-quoted value": ("ServerArgs(api_key='{}', tp_size=8)", words.map(" ".join)),
    "url with no user": ("connecting to redis://:{}@cache.internal:6379/0", url_password),
    "url with a user": ("proxy https://alice:{}@proxy.example:3128 used", url_password),
    "authorization header": ("POST /generate HTTP/1.1 Authorization: Bearer {}", bearer),
    "escaped authorization": ('{{"headers": "{{\\"Authorization\\": \\"Bearer {}\\"}}"}}', bearer),
    "hf token": ("huggingface_hub: token {} is invalid", hf),
    "flag": ("--api-key {} --port 30000", piece),
}


def _survivors(secret: str, out: str, context: str) -> list[str]:
    """Pieces of ``secret`` (8+ characters, split on spaces) still in ``out`` that the context itself lacks."""
    return [p for p in secret.split(" ") if len(p) >= 8 and p in out and p not in context]


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), data=st.data())
def test_no_piece_of_a_generated_secret_survives_and_the_lines_stay(shape: str, data: st.DataObject) -> None:
    template, secrets = SHAPES[shape]
    secret = data.draw(secrets)
    line = template.format(secret)
    text = f"[2026-01-01 10:00:00] before\n{line}\n{line}\r\nafter the secret\n"
    out = redact(text)
    context = template.format("") + MASK
    assert secret not in out
    assert _survivors(secret, out, context) == []
    assert out.splitlines()[0] == "[2026-01-01 10:00:00] before" and out.splitlines()[-1] == "after the secret"
    assert [c for c in out if c in LINE_BREAKS] == [c for c in text if c in LINE_BREAKS]


@settings(max_examples=40, deadline=None)
@given(password=url_password, suffix=st.sampled_from(["REDIS_URL", "CACHE_DSN", "EXTRA"]))
def test_an_sglang_variable_holding_a_url_password_is_masked(password: str, suffix: str) -> None:
    out = redact_env(f"SGLANG_{suffix}", f"redis://:{password}@10.0.0.5:6379")
    assert password not in out and _survivors(password, out, "redis://:@10.0.0.5:6379" + MASK) == []


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(string.printable + LINE_BREAKS + "\"'\\")) | st.characters(),
               max_size=300),
       st.sampled_from(["", "Authorization: Bearer ", "password: \"", "api_key='", "\\\"token\\\": \\\"",
                        "redis://:", "--hf-token "]))
def test_redaction_never_removes_or_adds_a_line_break(text: str, lead: str) -> None:
    for sample in (text, lead + text, text + lead + text):
        out = redact(sample)
        assert [c for c in out if c in LINE_BREAKS] == [c for c in sample if c in LINE_BREAKS], sample
