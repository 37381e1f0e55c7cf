"""The Textual adapter: a newer GPU sample replaces a pending one; engine batches are never merged away."""

from __future__ import annotations

from textual.app import App

from symmtui.session.messages import EngineBatch, GpuSample, Notice
from symmtui.ui.bridge import EngineBatchPosted, GpuSamplePosted, NoticePosted, poster
from tests.ui.kit import READY_LOG, fixed_gpus, read_lines, replay


class Counting(App[None]):
    def __init__(self, samples: list[GpuSample], batches: list[EngineBatch]) -> None:
        super().__init__()
        self.samples, self.batches = samples, batches
        self.shown_samples: list[GpuSample] = []
        self.shown_batches: list[EngineBatch] = []
        self.notices: list[str] = []

    def on_mount(self) -> None:
        post = poster(self.post_message)  # what a Session calls, from any thread
        for sample in self.samples:  # queued while on_mount runs: the loop sees them all pending
            post(sample)
        for batch in self.batches:
            post(batch)
        post(Notice("hello"))

    def on_gpu_sample_posted(self, message: GpuSamplePosted) -> None:
        self.shown_samples.append(message.sample)

    def on_engine_batch_posted(self, message: EngineBatchPosted) -> None:
        self.shown_batches.append(message.batch)

    def on_notice_posted(self, message: NoticePosted) -> None:
        self.notices.append(message.notice.text)
        self.exit()


async def test_pending_gpu_samples_collapse_to_the_latest_and_batches_all_arrive() -> None:
    snap, _topo = fixed_gpus(0.5)
    samples = [GpuSample(snap, frozenset({i}), (12, 0)) for i in range(5)]
    lines = read_lines(READY_LOG, upto=30)
    _events, state = replay(lines)
    batches = [EngineBatch(tuple(lines[i * 10:(i + 1) * 10]), (), (), state, 0, 0, None) for i in range(3)]
    app = Counting(samples, batches)
    async with app.run_test() as pilot:
        await pilot.pause()
    assert app.shown_samples == [samples[-1]]  # only the latest mattered
    assert app.shown_batches == batches  # every line arrived, in order
    assert app.notices == ["hello"]
