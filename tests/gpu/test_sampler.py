"""The sampler: its own thread, bounded history, prompt stop, never blocking its caller."""

from __future__ import annotations

import queue
import threading
import types

import pytest

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.standin import StandinHost, load_standin

WAIT = 30.0  # generous: only a broken sampler takes this long


def _collector() -> tuple[queue.Queue[GpuSnapshot], object]:
    q: queue.Queue[GpuSnapshot] = queue.Queue()
    return q, q.put


@pytest.mark.parametrize("interval", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_interval_is_refused(rtx: Nvml, interval: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        GpuSampler(rtx, interval=interval)


def test_thread_delivers_snapshots_and_stops_promptly(rtx: Nvml) -> None:
    q, put = _collector()
    sampler = GpuSampler(rtx, interval=0.01, on_sample=put)  # type: ignore[arg-type]
    sampler.start()
    sampler.start()  # idempotent
    try:
        snaps = [q.get(timeout=WAIT) for _ in range(3)]
    finally:
        assert sampler.stop(timeout=WAIT)
    assert [s.seq for s in snaps] == [1, 2, 3]
    assert all(len(s.samples) == 8 and len(s.infos) == 8 for s in snaps)
    assert all(s.cost_seconds > 0 and s.calls > 0 and s.slowest_call for s in snaps)
    assert threading.current_thread().name not in {"symmtui-gpu-sampler"}
    assert not sampler.running


def test_stop_does_not_wait_for_the_interval(rtx: Nvml) -> None:
    q, put = _collector()
    sampler = GpuSampler(rtx, interval=3600.0, on_sample=put)  # type: ignore[arg-type]
    sampler.start()
    q.get(timeout=WAIT)  # first round done; now it sleeps for an hour on an Event
    stopper = threading.Thread(target=sampler.stop, kwargs={"timeout": WAIT}, daemon=True)
    stopper.start()
    stopper.join(WAIT)
    assert not stopper.is_alive()
    assert not sampler.running


def test_slow_nvml_call_never_blocks_the_reader(rtx_mod: types.ModuleType) -> None:
    host: StandinHost = rtx_mod.standin
    q, put = _collector()
    sampler = GpuSampler(Nvml(rtx_mod), interval=0.01, on_sample=put)  # type: ignore[arg-type]
    sampler.start()
    try:
        first = q.get(timeout=WAIT)
        gate, entered = threading.Event(), threading.Event()
        host.slow("nvmlDeviceGetPowerUsage", WAIT, gate=gate, entered=entered)
        assert entered.wait(WAIT)  # the sampler thread is now stuck inside NVML
        got: list[GpuSnapshot | None] = []
        reader = threading.Thread(target=lambda: got.append(sampler.latest()))
        reader.start()
        reader.join(WAIT)
        assert not reader.is_alive() and got[0] is not None and got[0].seq >= first.seq
        assert sampler.busy_for() > 0.0
        host.heal()
        gate.set()
        slow = q.get(timeout=WAIT)
        while slow.slowest_call != "nvmlDeviceGetPowerUsage":
            slow = q.get(timeout=WAIT)
    finally:
        gate.set()
        assert sampler.stop(timeout=WAIT)
    assert slow.cost_seconds >= slow.slowest_call_seconds > 0
    assert sampler.busy_for() == 0.0


def test_a_failing_consumer_does_not_stop_sampling(rtx: Nvml) -> None:
    calls: queue.Queue[int] = queue.Queue()

    def broken(snap: GpuSnapshot) -> None:
        calls.put(snap.seq)
        raise RuntimeError("consumer bug")

    sampler = GpuSampler(rtx, interval=0.01, on_sample=broken)
    with sampler:
        assert [calls.get(timeout=WAIT) for _ in range(3)] == [1, 2, 3]
    assert sampler.callback_errors >= 3
    assert sampler.last_error == "on_sample: RuntimeError: consumer bug"  # counted and kept, not swallowed


def test_unavailable_nvml_gives_snapshots_with_the_reason() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    mod.standin.fail_init(mod.NVML_ERROR_DRIVER_NOT_LOADED)
    sampler = GpuSampler(Nvml(mod))
    snap = sampler.sample_once()
    assert snap.samples == () and snap.infos == ()
    assert snap.unavailable_reason is not None and snap.unavailable_reason.startswith("NVML unavailable: ")
    assert "not loaded" in snap.unavailable_reason


def test_a_bug_in_one_round_does_not_end_the_thread(rtx_mod: types.ModuleType) -> None:
    class FlakyOnce(Nvml):
        failed = False

        def sample_all(self) -> tuple:  # type: ignore[type-arg]
            if not self.failed:
                self.failed = True
                raise RuntimeError("bug in a parser")
            return super().sample_all()

    q, put = _collector()
    sampler = GpuSampler(FlakyOnce(rtx_mod), interval=0.01, on_sample=put)  # type: ignore[arg-type]
    with sampler:
        snap = q.get(timeout=WAIT)
    assert len(snap.samples) == 8
    assert sampler.sample_errors == 1 and sampler.last_error == "RuntimeError: bug in a parser"
