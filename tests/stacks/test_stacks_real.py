"""`symmtui stacks` on a real hung process tree: 8 rank processes (half setsid'd), one stuck elsewhere."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from symmtui.proc import access
from tests.stacks.hang_kit import hung_server

PR_CAPBSET_DROP = 24


def stacks(*args: str, preexec: object = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "symmtui", "stacks", *args], capture_output=True, text=True,
                          timeout=60, preexec_fn=preexec)  # type: ignore[arg-type]


def _can_trace() -> bool:
    a = access.current()
    return a.has_ptrace_cap or a.yama_scope in (None, 0)


needs_ptrace = pytest.mark.skipif(not _can_trace(), reason="this host forbids ptrace for the test user")


@needs_ptrace
def test_eight_ranks_collapse_into_two_groups_naming_the_odd_rank(tmp_path: Path) -> None:
    with hung_server(tmp_path, hang_rank=5) as (proc, log):
        done = stacks("--pid", str(proc.pid), "--log", str(log), "--json")
        text = stacks("--pid", str(proc.pid), "--log", str(log), "--no-save")
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    ranked = [g for g in rep["groups"] if any(r is not None for r in g["ranks"])]
    assert len(ranked) == 2, ranked
    big, odd = ranked
    assert big["ranks"] == ["TP0", "TP1", "TP2", "TP3", "TP4", "TP6", "TP7"]
    assert big["labels"] == "TP0-TP4, TP6, TP7"
    assert big["headline"].startswith("stay ← barrier ← load_model")
    assert big["phase"] == "waiting for peers"
    assert odd["ranks"] == ["TP5"]
    assert odd["headline"].startswith("stay ← nccl_comm_init_rank ← init_process_group")
    assert odd["phase"] == "NCCL init"
    assert odd["hints"][0]["id"] == "hang-nccl-init-p2p" and "NCCL_P2P_DISABLE=1" in odd["hints"][0]["text"]
    # the setsid'd ranks (even) are in the tree too: every rank process was read
    workers = [p for p in rep["processes"] if p["rank"]]
    assert len(workers) == 8 and all(p["status"] == "ok" for p in workers)
    assert rep["ranks"] == "7/8 ranks finished init distributed; TP5 still init distributed, silent " + \
        rep["ranks"].rsplit("silent ", 1)[1]
    # the text view: the collapsed summary first, the odd rank named
    lines = text.stdout.splitlines()
    assert lines[3].startswith("7 processes (TP0-TP4, TP6, TP7) in stay ← barrier ← load_model")
    assert lines[4].startswith("TP5 in stay ← nccl_comm_init_rank ← init_process_group")
    # saved next to the log with a timestamp (the --json run), and not by the --no-save run
    saved = sorted(log.parent.glob("server.log.stacks-*"))
    assert [p.suffix for p in saved] == [".json", ".txt"]
    assert json.loads(saved[0].read_text())["groups"] == rep["groups"]


def _drop_ptrace() -> None:
    """Run as in a container started without CAP_SYS_PTRACE (Docker's default): drop it from the
    bounding set, so the exec'd symmtui and its py-spy never hold it."""
    if ctypes.CDLL(None).prctl(PR_CAPBSET_DROP, access.CAP_SYS_PTRACE, 0, 0, 0) != 0:
        os._exit(99)


@pytest.mark.skipif(os.geteuid() != 0 or not access.current().has_ptrace_cap,
                    reason="dropping CAP_SYS_PTRACE needs root holding it (CAP_SETPCAP)")
def test_without_ptrace_permission_the_answer_is_one_line(tmp_path: Path) -> None:
    with hung_server(tmp_path, hang_rank=5) as (proc, log):
        done = stacks("--pid", str(proc.pid), "--log", str(log), preexec=_drop_ptrace)
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("symmtui: error: cannot read the stacks: this process may not use ptrace: "
                               "CAP_SYS_PTRACE is not in its capability bounding set")
    assert "--cap-add=SYS_PTRACE" in lines[0]
    assert not list(log.parent.glob("server.log.stacks-*")), "nothing saved when nothing was read"


def test_a_pid_that_is_not_running_is_one_line() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    done = stacks("--pid", str(p.pid))
    assert done.returncode == 2
    assert done.stderr.strip() == f"symmtui: error: no running process {p.pid}: give the pid of the server's main process"
