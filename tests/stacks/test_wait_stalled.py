"""`symmtui wait` on the real hung tree: STALLED names the rank behind and the collapsed stacks under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from symmtui.gpu.standin import ENV_VAR
from symmtui.gpu.standin.scenarios import scenario_data
from tests.stacks.hang_kit import hung_server
from tests.stacks.test_stacks_real import needs_ptrace


def wait(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "symmtui", "wait", "--no-record", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


def one_gpu_spinning(tmp: Path, busy: int = 3) -> dict[str, str]:
    """An NVML stand-in recording of 8 GPUs, ``busy`` at 100 % and the others at 0 %: the env that loads it."""
    data = scenario_data("rtx-pro-6000-x8-pcie")
    data["dynamic"] = False  # answers as recorded
    for i, dev in enumerate(data["devices"]):
        dev["nvmlDeviceGetUtilizationRates"] = {"v": {"__struct__": {"gpu": 100 if i == busy else 0, "memory": 0}}}
    path = tmp / "one-gpu-spinning.json"
    path.write_text(json.dumps(data))
    return {ENV_VAR: str(path)}


@needs_ptrace
def test_stalled_names_the_rank_behind_and_prints_the_stacks_once(tmp_path: Path) -> None:
    with hung_server(tmp_path, hang_rank=5) as (proc, log):
        done = wait("--pid", str(proc.pid), "--log", str(log), "--stall", "0.5", "--timeout", "1.5",
                    env=one_gpu_spinning(tmp_path))
    assert done.returncode == 124, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if " STALLED: " in ln)
    assert lines[at + 1].startswith("  ranks: 7/8 ranks finished init distributed; TP5 still init distributed, silent ")
    assert lines[at + 2].startswith("  stacks: 7 processes (TP0-TP4, TP6, TP7) in stay ← barrier ← load_model")
    assert lines[at + 3].lstrip().startswith("TP5 in stay ← nccl_comm_init_rank ← init_process_group")
    block = [ln.strip() for ln in lines[at + 1:at + 12]]
    # the GPUs' evidence, read from NVML once at the stall (wait samples nothing before)
    assert any(ln.startswith("GPUs: GPU 3 at 100 %, the others at 0 % (spinning in a collective)") for ln in block)
    # the catalogue's hang hints for the phases named (symmtui/catalogue/50-hangs.toml)
    assert any(ln.startswith("try: NCCL init that never returns") and "NCCL_P2P_DISABLE=1" in ln for ln in block)
    assert sum(ln.count("stacks:") for ln in lines) == 1, "one dump per stall, not one per tick"
    assert len(list(log.parent.glob("server.log.stacks-*.json"))) == 1
    timed_out = lines.index(next(ln for ln in lines if ln.startswith("TIMED OUT")))
    assert any(ln.startswith("  ranks: 7/8 ranks finished init distributed; TP5") for ln in lines[timed_out:])


@needs_ptrace
def test_no_stacks_and_a_log_without_ranks_keep_todays_output(tmp_path: Path) -> None:
    with hung_server(tmp_path, hang_rank=5) as (proc, log):
        plain = tmp_path / "plain.log"
        plain.write_text("".join(ln.split("] ", 1)[1] + "\n" for ln in log.read_text().splitlines()))
        with ThreadPoolExecutor(2) as pool:  # two independent waits, side by side
            done_f = pool.submit(wait, "--pid", str(proc.pid), "--log", str(log), "--stall", "0.5", "--timeout", "1.5",
                                 "--no-stacks")
            bare_f = pool.submit(wait, "--log", str(plain), "--stall", "0.5", "--timeout", "1.5")
            done, bare = done_f.result(), bare_f.result()
    assert done.returncode == 124 and " STALLED: " in done.stdout
    assert "stacks:" not in done.stdout and "  ranks: 7/8" in done.stdout
    assert bare.returncode == 124
    assert "ranks:" not in bare.stdout and "stacks:" not in bare.stdout
    assert " STALLED: " in bare.stdout
