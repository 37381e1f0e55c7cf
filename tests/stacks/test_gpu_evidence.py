"""The GPUs' evidence under a hang: all idle, one spinning, all spinning; in the GPU panel's title while
STALLED, in a real dump read from the sampler, and in `wait`'s STALLED block (tests/stacks/test_wait_stalled.py)."""

from __future__ import annotations

import time

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.judge.readiness import Readiness, ReadinessConfig, State
from symmtui.session.intents import DumpStacks
from symmtui.session.messages import GpuRound
from symmtui.stacks.gpus import gpu_evidence
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.gpu_panel import GpuPanel
from tests.stacks.test_stacks_real import needs_ptrace
from tests.ui.kit import READY_LOG, FixedSession, demo_session, read_lines, settle, text


def test_all_idle_one_busy_all_busy_and_silence() -> None:
    assert gpu_evidence([0, 0, 0, 0]) == ("GPUs: all 4 GPUs at 0 % (host side): nothing runs on them; the hang is "
                                          "in the host's code (init, a peer, I/O, a lock)")
    one = gpu_evidence([0, 0, 0, 100, 0, 0, 0, 1])
    assert one is not None and one.startswith("GPUs: GPU 3 at 100 %, the others at 0-1 % (spinning in a collective)")
    two = gpu_evidence([97, 0, 100, 0])
    assert two is not None and two.startswith("GPUs: GPUs 0, 2 at 97-100 %, the others at 0 % (spinning")
    assert str(gpu_evidence([100, 98, 100, 99])).startswith("GPUs: all 4 GPUs at 98-100 % (all spinning)")
    assert gpu_evidence([40, 60, 0, 100]) is None  # mixed load says nothing about a hang
    assert gpu_evidence([None, None]) is None and gpu_evidence([]) is None
    assert gpu_evidence([None, 0, 0]) == gpu_evidence([0, 0])  # an unreadable GPU is left out


def _stalled_session() -> FixedSession:
    """The first 60 lines of a real SGLang TP8 log, then silence past the stall limit; GPU 3 busy, the rest idle."""
    lines = read_lines(READY_LOG, upto=60)
    from symmtui.judge.events import EventBuilder
    from symmtui.judge.rules import RuleSet

    builder, readiness = EventBuilder(RuleSet()), Readiness(ReadinessConfig(timeout=None, stall=5.0), 0.0)
    events = []
    for n, line in enumerate(lines):
        for ev in builder.feed(line):
            events.append(ev)
            readiness.feed(ev, n * 0.1)
        readiness.feed_activity(n * 0.1)
    readiness.tick(60.0)
    snap = readiness.snapshot(60.0)
    assert snap.state is State.STALLED
    module = load_standin("rtx-pro-6000-x8-pcie", clock=lambda: 1000.0)
    host = standin_host(module)
    host.set_utilization(0.0)
    host.set_utilization(100.0, index=3)
    nvml = Nvml(module)
    gpus = GpuSampler(nvml).sample_once()
    nvml.shutdown()
    return FixedSession(lines, events, snap, gpus, None, log_path=READY_LOG)


async def test_the_gpu_panel_names_the_spinning_gpu_next_to_the_stall() -> None:
    app = SymmApp(_stalled_session())
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        panel = app.query_one(GpuPanel)
        assert panel.border_title == "GPUs · stalled: GPU 3 at 100 %, the others at 0 % (spinning in a collective)"
        assert "STALLED" in text(app) and "GPU 3 at 100 %, the others at 0 %" in text(app)
        panel.show_stall(False)  # the state moved on: the title is the plain one again
        assert panel.border_title == "GPUs"


@needs_ptrace
def test_a_dump_of_the_hung_demo_carries_the_gpus_line() -> None:
    session, demo = demo_session(10.0, "hang")
    try:
        demo.host.set_utilization(0)
        pinned_at = time.time()
        box = session.attach(lambda: None)  # the sampler reads the NVML stand-in (8 GPUs)
        pinned = False  # a sampling round that started after the utilization was pinned

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not pinned or len(session.head.server_procs()) < 9):
            box.wait(0.05)
            pinned = pinned or any(isinstance(m, GpuRound) and m.snapshot.time > pinned_at for m in box.take())
        report, _saved = session.ask(DumpStacks(keep=False))
    finally:
        session.close()
    assert report.gpus is not None and report.gpus.startswith("GPUs: all 8 GPUs at 0 % (host side)")
    assert report.gpus in report.summary()
