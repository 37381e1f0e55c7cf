"""py-spy runs: a Python process, a process that is not Python, a pid that is gone; the frames that matter."""

from __future__ import annotations

import subprocess
import sys
import time

from symmtui.stacks.collapse import collapse, fold, headline
from symmtui.stacks.model import Frame, ProcDump, ThreadStack
from symmtui.stacks.phase import phase_of, phase_of_stack
from symmtui.stacks.pyspy import dump_many, dump_one
from tests.stacks.test_stacks_real import needs_ptrace

BLOCKED = """
import threading, time
def waits_here():
    threading.Event().wait()
print("ready", flush=True)
waits_here()
"""


@needs_ptrace
def test_python_not_python_and_gone() -> None:
    py = subprocess.Popen([sys.executable, "-c", BLOCKED], stdout=subprocess.PIPE, text=True)
    other = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        assert py.stdout is not None and py.stdout.readline() == "ready\n"
        time.sleep(0.1)
        a, b, c = dump_many([(py.pid, "py"), (other.pid, "sleep"), (gone.pid, "gone")], limit=10)
    finally:
        py.kill()
        other.kill()
        py.wait()
        other.wait()
    assert a.status == "ok", a
    main = a.main_thread()
    assert main is not None and main.tid == py.pid
    names = [f.name for f in main.frames]
    assert "waits_here" in names and names.index("waits_here") < names.index("<module>")
    assert headline(main.frames).startswith("waits_here")  # threading.py's wait frames are folded
    assert fold(main.frames)[0].startswith("… ") and "stdlib" in fold(main.frames)[0]
    assert (b.status, b.detail) == ("not-python", "not a Python process")
    assert c.status == "gone"


def test_a_process_that_does_not_answer_in_time_is_a_timeout() -> None:
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        d = dump_one(stopped.pid, limit=0.001)
    finally:
        stopped.kill()
        stopped.wait()
    assert d.status == "timeout" and "0.001 s" in d.detail


SITE = "/usr/local/lib/python3.12/dist-packages"


def f(name: str, path: str, line: int = 1) -> Frame:
    return Frame(name, path, path.rsplit("/", 1)[-1], line)


def test_the_innermost_torch_frame_leads_and_names_the_phase() -> None:
    frames = (
        f("wait", "/usr/lib/python3.12/threading.py"),
        f("_store_based_barrier", f"{SITE}/torch/distributed/distributed_c10d.py"),
        f("init_process_group", f"{SITE}/torch/distributed/distributed_c10d.py"),
        f("init_distributed_environment", f"{SITE}/sglang/srt/distributed/parallel_state.py"),
        f("run_scheduler_process", f"{SITE}/sglang/srt/managers/scheduler.py"),
        f("_bootstrap", "/usr/lib/python3.12/multiprocessing/process.py"),
    )
    assert headline(frames) == "_store_based_barrier ← init_process_group ← init_distributed_environment ← …"
    assert phase_of_stack(frames) == "waiting for peers"
    assert phase_of_stack(frames[2:]) == "NCCL init"
    loading = (f("get_slice", f"{SITE}/safetensors/torch.py"), f("load_weights", f"{SITE}/sglang/srt/models/x.py"))
    assert phase_of_stack(loading) == "weight loading"
    idle = (f("event_loop", f"{SITE}/sglang/srt/managers/scheduler.py"),)
    assert phase_of_stack(idle) is None
    assert phase_of(idle, "capturing CUDA graphs") == "CUDA graph capture"  # the log decides then


def test_ranks_in_a_collective_wait_for_peers_and_the_odd_rank_is_pointed_at() -> None:
    """The frames py-spy read on an H200 (torch 2.11, 8 gloo ranks, rank 5 never joining the all_reduce; the
    run is kept in docs/h200-2026-12-01-job.txt): the seven in the collective are "waiting for peers", whose
    hint sends the reader to the odd rank, rather than the log's phase ("loading weights") and its disk hints."""
    site = "/opt/torch/.venv/lib/python3.12/site-packages"
    waiting = (f("all_reduce", f"{site}/torch/distributed/distributed_c10d.py", 3075),
               f("_exception_logger.<locals>.wrapper", f"{site}/torch/distributed/c10d_logger.py", 83),
               f("<module>", "hang8.py", 19))
    assert phase_of_stack(waiting) == "waiting for peers"
    tp = (f("tensor_model_parallel_all_reduce", f"{SITE}/sglang/srt/distributed/communication_op.py"),)
    assert phase_of_stack(tp) == "waiting for peers"
    hung = (f("<module>", "hang8.py", 17),)

    def dump(pid: int, rank: int, frames: tuple[Frame, ...]) -> ProcDump:
        return ProcDump(pid, "python -u hang8.py", "ok", threads=(ThreadStack(pid, "MainThread", True, frames),),
                        rank=f"rank {rank}")

    groups = collapse([dump(800 + r, r, hung if r == 5 else waiting) for r in range(8)], "loading weights")
    assert [(len(g.procs), g.phase) for g in groups] == [(7, "waiting for peers"), (1, "weight loading")]
    assert "odd rank" in groups[0].hints[0].text
