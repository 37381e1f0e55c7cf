"""The GPUs' evidence under a hang: all idle, one spinning, all spinning; read from the sampler in a real dump."""

from __future__ import annotations

import time

from symmtui.session import open_demo
from symmtui.stacks.gpus import gpu_evidence
from tests.stacks.test_stacks_real import needs_ptrace


def test_all_idle_one_busy_all_busy_and_silence() -> None:
    assert gpu_evidence([0, 0, 0, 0]) == ("GPUs: all 4 at 0 % or less: nothing runs on them; the hang is on "
                                          "the host side (init, a peer, I/O, a lock)")
    one = gpu_evidence([0, 0, 0, 0, 0, 100, 0, 1])
    assert one is not None and one.startswith("GPUs: GPU 5 at 100 % or more, the others idle: a rank spinning")
    assert gpu_evidence([100, 98, 100, 99]) is not None and "all 4 busy" in str(gpu_evidence([100, 98, 100, 99]))
    assert gpu_evidence([40, 60, 0, 100]) is None  # mixed load says nothing about a hang
    assert gpu_evidence([None, None]) is None and gpu_evidence([]) is None


@needs_ptrace
def test_a_dump_of_the_hung_demo_carries_the_gpus_line() -> None:
    session, demo = open_demo(speed=10.0, story="hang")
    try:
        session.attach(lambda _m: None)  # starts the sampler over the NVML stand-in (8 GPUs)
        demo.host.set_utilization(0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (session.sampler is None or session.sampler.latest() is None
                                               or len(session.server_procs()) < 9):
            time.sleep(0.1)
        time.sleep(1.5)  # a sample taken after the utilization was pinned
        taken = session.take_stacks()
    finally:
        session.close()
    assert taken.report is not None, taken.error
    assert taken.report.gpus is not None and taken.report.gpus.startswith("GPUs: all 8 at 0 % or less")
    assert taken.report.gpus in taken.report.summary()
