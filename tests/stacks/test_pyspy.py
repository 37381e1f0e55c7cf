"""py-spy runs: a Python process, a process that is not Python, a pid that is gone; the frames that matter."""

from __future__ import annotations

import subprocess
import sys
import time

from symmtui.stacks.collapse import fold, headline
from symmtui.stacks.model import Frame
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
