"""stop waits for GPU memory through symmtui.gpu.facts (the pynvml stand-in: this machine has no GPU)."""

from __future__ import annotations

import threading
from pathlib import Path

from symmtui.gpu.facts import gpu_pids_from
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.launch.report import Progress, Step
from symmtui.launch.supervisor import Supervisor
from tests.launch.helpers import demo_profile, log_contains, wait_until


def test_stop_waits_until_nvml_lists_our_pid_no_more(tmp_path: Path) -> None:
    """The server holds GPU memory (stand-in); after it dies the driver frees it a moment later."""
    mod = load_standin("rtx-pro-6000-x8-pcie")
    host = standin_host(mod)
    sup = Supervisor(demo_profile(tmp_path, "--listen-early"), gpu_pids=gpu_pids_from(Nvml(module=mod)))
    rec = sup.launch()
    wait_until(log_contains(rec.log_path, "server_args="), what="server up")
    host.set_load(0.9, rec.pid)

    stop_waits_for_gpu = threading.Event()

    def driver_frees_memory() -> None:
        # the driver releases the memory only once the stop is already waiting for it
        if stop_waits_for_gpu.wait(30):
            host.set_load(0.0)

    def on_progress(p: Progress) -> None:
        steps.append(p.step)
        if p.step is Step.GPU and p.remaining == (rec.pid,):
            stop_waits_for_gpu.set()

    t = threading.Thread(target=driver_frees_memory)
    t.start()
    steps: list[Step] = []
    report = sup.stop(on_progress)
    stop_waits_for_gpu.set()
    t.join(30)
    assert Step.GPU in steps and report.gpu_free is True and report.clean
