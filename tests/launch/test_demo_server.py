"""The simulated SGLang server: its log has SGLang's shapes, /health follows the load, faults are real."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.launch.helpers import demo_argv, free_port, wait_until

RANK = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP(\d+)\] ")


def _run(tmp_path: Path, *args: str, timeout: float = 60, env: dict[str, str] | None = None) -> tuple[int, str]:
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        rc = subprocess.run(demo_argv("--speed", "1000", "--shards", "6", *args), stdout=fh,
                            stderr=subprocess.STDOUT, timeout=timeout, env=env).returncode
    return rc, log.read_bytes().decode()  # bytes: read_text() would turn \r into \n


def _health(port: int) -> int | str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except (urllib.error.URLError, ConnectionError) as e:
        return type(getattr(e, "reason", e)).__name__


def test_ready_log_has_sglang_shapes(tmp_path: Path) -> None:
    rc, text = _run(tmp_path, "--port", str(free_port()), "--ready-for", "0")
    assert rc == 0
    lines = text.splitlines()
    assert lines[0].split("] ", 1)[1].startswith("server_args=ServerArgs(")
    ranks = [int(m.group(1)) for line in lines if (m := RANK.match(line)) and "Init torch distributed begin" in line]
    assert ranks == list(range(8))
    shards = [line for line in lines if line.startswith("Loading safetensors checkpoint shards:")]
    assert shards[0].endswith("0/6 [00:00<00:31, ?it/s]") and "100% Completed | 6/6" in shards[-1]
    assert any(line.startswith("Capturing batches (bs=160 avail_mem=9.50 GB):   0%|") for line in lines)
    order = ["Init torch distributed ends", "Load weight begin", "Load weight end", "KV Cache is allocated",
             "Capture cuda graph begin", "Capture cuda graph end", "Uvicorn running on http://0.0.0.0:",
             "The server is fired up and ready to roll!"]
    pos = [text.index(marker) for marker in order]
    assert pos == sorted(pos)
    assert lines[-1].endswith("The server is fired up and ready to roll!")


def test_tty_progress_uses_carriage_returns(tmp_path: Path) -> None:
    rc, text = _run(tmp_path, "--port", str(free_port()), "--ready-for", "0", "--tty-progress")
    assert rc == 0
    (bar,) = [line for line in text.split("\n") if "Loading safetensors" in line]
    assert bar.count("\rLoading safetensors checkpoint shards:") == 7


def test_health_refused_then_503_then_200(tmp_path: Path) -> None:
    port = free_port()
    status = tmp_path / "status.json"
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(demo_argv("--speed", "50", "--shards", "3", "--port", str(port),
                                          "--status-file", str(status)), stdout=fh, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "Init torch distributed begin" in log.read_text(), what="loading")
        assert _health(port) == "ConnectionRefusedError"  # as SGLang: no listener while loading
        fractions: list[float] = []

        def ready() -> bool:
            if status.exists():
                fractions.append(json.loads(status.read_text())["memory_fraction"])
            return _health(port) == 200

        wait_until(ready, timeout=60, what="health 200")
        final = json.loads(status.read_text())
        assert final["state"] == "ready" and final["pid"] == proc.pid and final["memory_fraction"] == 0.9
        assert fractions == sorted(fractions) and fractions[-1] > fractions[0]  # memory follows the load
        assert 'GET /health HTTP/1.1" 200 OK' in log.read_text()  # uvicorn access lines
    finally:
        proc.terminate()
        assert proc.wait(10) == 128 + signal.SIGTERM


def test_listen_early_answers_503_while_loading(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(demo_argv("--speed", "1", "--port", str(port), "--listen-early"), stdout=fh)
    try:
        wait_until(lambda: _health(port) == 503, what="503 while loading")
    finally:
        proc.kill()
        proc.wait()


def test_crash_keyerror_shape(tmp_path: Path) -> None:
    rc, text = _run(tmp_path, "--port", str(free_port()), "--crash", "keyerror")
    assert rc == 1
    assert text.count("Scheduler hit an exception: Traceback (most recent call last):") == 8
    assert text.count("KeyError: 12") == 8
    assert "torch_symm_mem.py\", line 83, in __init__" in text
    assert text.rstrip().endswith("Received sigquit from a child process. It usually means the child failed.")
    assert "Load weight begin" not in text  # it dies during distributed init, before weights


def test_deepgemm_crash_unless_the_env_turns_jit_deepgemm_off(tmp_path: Path) -> None:
    """--deepgemm-sm120: the sglang#7227 traceback at CUDA-graph capture; SGLANG_ENABLE_JIT_DEEPGEMM=0 comes up."""
    env = {k: v for k, v in os.environ.items() if k != "SGLANG_ENABLE_JIT_DEEPGEMM"}
    rc, text = _run(tmp_path, "--port", str(free_port()), "--deepgemm-sm120", env=env)
    assert rc == 1
    lines = text.rstrip().splitlines()
    assert lines[-2] == "KeyError: '120a'"
    assert lines[-1].endswith("Received sigquit from a child process. It usually means the child failed.")
    assert 'deep_gemm/dispatch.py", line 23, in must_be_k_major' in text
    assert text.index("Capture cuda graph begin") < text.index("KeyError: '120a'")
    assert "Capturing batches" not in text
    for value in ("1", ""):  # only "0" turns it off
        rc, _ = _run(tmp_path, "--port", str(free_port()), "--deepgemm-sm120",
                     env=env | {"SGLANG_ENABLE_JIT_DEEPGEMM": value})
        assert rc == 1
    rc, text = _run(tmp_path, "--port", str(free_port()), "--deepgemm-sm120", "--ready-for", "0",
                    env=env | {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"})
    assert rc == 0
    assert "KeyError" not in text
    assert text.rstrip().endswith("The server is fired up and ready to roll!")


def test_crash_segfault_no_traceback(tmp_path: Path) -> None:
    rc, text = _run(tmp_path, "--port", str(free_port()), "--crash", "segfault")
    assert rc == -signal.SIGSEGV
    assert "Traceback" not in text and "Fatal Python error" not in text
    assert "Loading safetensors checkpoint shards:  33% Completed | 2/6" in text


def test_port_in_use_is_reported_like_uvicorn(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        rc, text = _run(tmp_path, "--port", str(s.getsockname()[1]), "--listen-early")
    assert rc == 1 and "ERROR:    [Errno 98] error while attempting to bind on address" in text
    assert "address already in use" in text


@pytest.mark.parametrize("bad", [["--tp", "0"], ["--speed", "0"]])
def test_bad_options(tmp_path: Path, bad: list[str]) -> None:
    rc, text = _run(tmp_path, *bad)
    assert rc == 2 and "must be positive" in text


def test_sandbox_decides_the_keyerror_and_the_patch_fixes_it(tmp_path: Path) -> None:
    """--sandbox: unpatched tables lack capability 12 -> KeyError crash; after the real patch -> ready."""
    from symmtui.demo.sandbox import write_sandbox
    from symmtui.patch import apply

    box = write_sandbox(tmp_path / "box")
    args = ("--sandbox", str(box.site), "--capability", "12", "--ready-for", "0")
    rc, text = _run(tmp_path, "--port", str(free_port()), *args)
    assert rc == 1 and "KeyError: 12" in text
    apply(box.site, "sglang", 12)
    rc, text = _run(tmp_path, "--port", str(free_port()), *args)
    assert rc == 0 and "KeyError" not in text and "fired up and ready to roll" in text
    # capability 9 (Hopper) was always in the tables
    rc, _ = _run(tmp_path, "--port", str(free_port()), "--sandbox", str(box.site), "--capability", "9",
                 "--ready-for", "0")
    assert rc == 0
