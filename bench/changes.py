"""What keeping each launch's facts costs: the history's size per launch, reading it, and a crash's comparison.

`python -m bench.changes` (a few seconds). A history of typical launches (an SGLang TP8 command of 17 flags,
12 variables of which one a secret, 8 GPUs, a model folder with its config and weight index), written
through the history writer, in the same run:
  - the baseline: the same launches without their facts (a history line as symmtui wrote it before);
  - with their facts;
  - the comparison a CRASHED verdict makes on the engine thread (``session.changes``: the history read
    once, the last READY launch of the profile found, compared and worded), on a history of 200 launches
    and on a full one (the 8 MiB the history is read of);
  - the verdict's history write (``History.append_once``: is this launch there already? then one line),
    which comes before the verdict is posted: only the lines that hold the launch's id are parsed (the
    whole history was, before; its read is the "read" column).
Target: the crash's comparison on a full history <= 1 s (the engine thread does it once per verdict;
READY's phase timings read the same history already), the verdict's write on a full history <= 50 ms,
and a line with facts <= 4 KiB.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from msgspec.structs import replace

TARGET_COMPARE_S = 1.0
TARGET_WRITE_S = 0.050
TARGET_LINE_BYTES = 4096
TRIALS = 5


def _history(folder: Path, n: int, facts: bool) -> Path:
    """A history file of ``n`` launches (one profile, every fourth crashed), with or without their facts."""
    from symmtui.launch.envinfo import GpuFact
    from symmtui.launch.facts import of_command
    from symmtui.launch.history import History, HistoryEntry

    model = folder / "GLM-5-NVFP4"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}" * 2000)
    (model / "model.safetensors.index.json").write_text("{}" * 50000)
    argv = ["/opt/venv/bin/python", "-m", "sglang.launch_server", "--model-path", str(model), "--tp", "8",
            "--host", "0.0.0.0", "--port", "30000", "--mem-fraction-static", "0.88", "--speculative-algorithm",
            "EAGLE3", "--speculative-num-steps", "3", "--cuda-graph-max-bs", "160", "--enable-torch-symm-mem",
            "--trust-remote-code", "--chunked-prefill-size", "8192", "--max-running-requests", "512",
            "--context-length", "202752", "--kv-cache-dtype", "fp8_e4m3", "--attention-backend", "flashinfer",
            "--enable-flashinfer-allreduce-fusion", "--served-model-name", "glm-5"]
    env = {"NCCL_P2P_LEVEL": "NVL", "NCCL_DEBUG": "WARN", "NCCL_IB_DISABLE": "1", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
           "CUDA_DEVICE_MAX_CONNECTIONS": "1", "SGLANG_ENABLE_JIT_DEEPGEMM": "0", "TORCH_CUDA_ARCH_LIST": "12.0",
           "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "HF_HOME": "/data/hf", "HF_HUB_OFFLINE": "1",
           "HF_TOKEN": "hf_" + "b" * 34, "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    gpus = tuple(GpuFact(i, "NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", 97887, f"GPU-{i:08x}-5a17-6000")
                 for i in range(8))
    kept = replace(of_command(argv, env, str(folder)), gpus=gpus)
    versions = {"symmtui": "0.1.0", "sglang": "0.5.9", "vllm": "0.11.0", "torch": "2.8.0", "nccl": "2.27.3",
                "cuda (torch)": "12.8", "driver": "580.82.07", "cuda driver": "13.0"}
    phases = {"launching": 0.1, "init distributed": 3.0, "loading weights": 430.1, "allocating KV cache": 4.0,
              "capturing CUDA graphs": 31.8, "starting HTTP server": 1.0, "warm-up": 2.0}
    path = folder / f"history-{n}-{facts}.jsonl"
    hist = History(path)
    for i in range(n):
        crashed = i % 4 == 3
        hist.append(HistoryEntry(
            launch_id=f"{i:032x}", command_hash="d4dbe5a977eb44ea", start=1.79e9 + 600 * i, end=1.79e9 + 600 * i + 472,
            verdict="crashed" if crashed else "ready", cause="KeyError: 12 at torch_symm_mem.py:83 (8 ranks)" if crashed
            else None, phases=phases, patch="no crash predicted", profile_key="625ac1bf5015d508",
            log_path=f"/srv/logs/2026120{i % 10}-2129{i % 60:02d}.log", versions=versions,
            facts=kept if facts else None, named=("--enable-torch-symm-mem",) if crashed else ()))
    return path


def _compare(path: Path) -> float:
    """Seconds of the comparison a CRASHED verdict makes: read the history, compare its last launch, word it."""
    from symmtui.launch.changes import since_ready
    from symmtui.launch.history import History

    t0 = time.perf_counter()
    entries = History(path).entries()
    changes, _ = since_ready(entries[-1], entries, hints=entries[-1].named, at=time.time())
    assert changes.since.startswith(("since", "nothing")), changes
    return time.perf_counter() - t0


def _write(path: Path, n: int) -> float:
    """Seconds of the verdict's write of one more launch to a copy of the history at ``path``."""
    import shutil

    from symmtui.launch.history import History

    copy = path.with_name(f"copy-{n}-{path.name}")
    shutil.copyfile(path, copy)
    hist = History(copy)
    last = hist.entries()[-1]
    t0 = time.perf_counter()
    hist.append_once(replace(last, launch_id=f"new{n:029x}"))
    took = time.perf_counter() - t0
    copy.unlink()
    return took


def _read(path: Path) -> float:
    from symmtui.launch.history import History

    t0 = time.perf_counter()
    History(path).entries()
    return time.perf_counter() - t0
    from symmtui.launch.history import History

    t0 = time.perf_counter()
    History(path).entries()
    return time.perf_counter() - t0


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["XDG_STATE_HOME"] = str(folder / "state")  # the salt goes there, not in the user's
        from symmtui.launch.history import MAX_READ_BYTES

        rows: list[tuple[str, str, str]] = []
        small = {facts: _history(folder, 200, facts) for facts in (False, True)}
        per_line = {facts: small[facts].stat().st_size / 200 for facts in (False, True)}
        full_n = int(MAX_READ_BYTES / per_line[True])
        full = {facts: _history(folder, full_n, facts) for facts in (False, True)}
        for name, files in (("200 launches", small), (f"{full_n} launches (8 MiB with facts)", full)):
            for facts in (False, True):
                reads = [_read(files[facts]) for _ in range(TRIALS)]
                compares = [_compare(files[facts]) for _ in range(TRIALS)]
                writes = [_write(files[facts], k) for k in range(TRIALS)]
                rows.append((f"{name}, {'with facts' if facts else 'without facts (baseline)'}",
                             *(f"{statistics.median(x) * 1000:.1f} ms" for x in (reads, compares, writes))))
        print(f"history line: {per_line[False]:.0f} bytes without facts, {per_line[True]:.0f} bytes with them")
        print("| history | read | crash comparison | verdict's write |\n|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        worst = max(_compare(full[True]) for _ in range(TRIALS))
        worst_write = max(_write(full[True], 100 + k) for k in range(TRIALS))
        ok = worst <= TARGET_COMPARE_S and worst_write <= TARGET_WRITE_S and per_line[True] <= TARGET_LINE_BYTES
        print(f"target: crash comparison on a full history <= {TARGET_COMPARE_S:.1f} s (worst of {TRIALS}: "
              f"{worst:.2f} s), the verdict's write <= {TARGET_WRITE_S * 1000:.0f} ms (worst: "
              f"{worst_write * 1000:.1f} ms), a line <= {TARGET_LINE_BYTES} bytes: {'met' if ok else 'MISSED'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
