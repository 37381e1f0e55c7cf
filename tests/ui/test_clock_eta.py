"""The right clock and the live ETA: a finished log judged on its own times, an attach shown since the
launch's first line, and an ETA from the live shard rate without history."""

from __future__ import annotations

from msgspec.structs import replace

from symmtui.judge import board as boards
from symmtui.judge import logclock as clock
from symmtui.judge.board import Board, NodeInput
from symmtui.judge.eta import RateMeter, about, combined, live_eta, tqdm_rate
from symmtui.judge.readiness import PhaseSpan, Snapshot, State
from symmtui.judge.verdict import NodeView, ready_words
from tests.ui.kit import READY_LOG, read_lines, replay


def loading(done: int, at: float, lines: tuple[str, ...] = ()) -> Snapshot:
    phases = (PhaseSpan("launching", 0.0, 1.0), PhaseSpan("loading weights", 1.0))
    return Snapshot(State.STARTING, "loading weights", done / 83, at, 0.0, None, phases, (), (), lines, 600.0,
                    progress_counts=(done, 83))


def verdict(snap: Snapshot, meter: RateMeter, eta: float | None = None, runs: int = 0) -> Board:
    """The Board of one node in ``snap`` as a Session builds it (``eta``: the history's, from ``runs`` earlier
    launches; the live rate from every snapshot ``meter`` was given, as the Session's meter measures it)."""
    meter.feed(snap)
    view = NodeView("host", snap, eta=eta, eta_runs=runs)
    return boards.build(1, [NodeInput(view, live=live_eta(snap, meter))], snap.started_at + snap.elapsed)


def test_the_eta_without_history_is_the_live_shard_rate() -> None:
    meter = RateMeter()
    for t, done in ((2.0, 16), (6.0, 24), (12.0, 37)):  # 21 shards in 10 s: 2.1 shards/s
        meter.feed(loading(done, t))
    snap = loading(37, 12.5)
    meter.feed(snap)  # no new shard: the rate is measured between the steps
    live = live_eta(snap, meter)
    assert live is not None and round(live.rate, 2) == 2.1 and round(live.rest) == 22
    assert about(live.rest) == "about 22 s" and live.unit == "shards"
    assert combined(None, live) == live.rest
    assert combined(100.0, live) == 100.0 and combined(10.0, live) == live.rest  # history refines, never below
    assert about(250) == "about 4 min" and about(3900) == "about 1 h 05 min"


def test_an_attach_takes_the_rate_tqdm_printed() -> None:
    line = "Loading safetensors checkpoint shards:  45% Completed | 37/83 [00:17<00:22,  2.10it/s]"
    assert tqdm_rate((line,)) == 2.10 and tqdm_rate(("x 12/23 [00:02<00:02,  1.25s/it]",)) == 0.8
    live = live_eta(loading(37, 0.1, (line,)), RateMeter())  # read at once: no rate of our own
    assert live is not None and about(live.rest) == "about 22 s"
    assert live_eta(replace(loading(37, 0.1), state=State.READY), RateMeter()) is None


def test_a_finished_log_is_judged_on_its_own_clock() -> None:
    """The whole log read at once (as the dashboard attaching to it does): READY 8m01s after its first line."""
    _events, snap = replay(read_lines(READY_LOG), step=0.0)
    assert snap.state is State.READY and (snap.verdict_elapsed or 0.0) < 1.0
    assert clock.verdict_after(snap) == (481.0, "after its first line")
    assert ready_words(snap) == "8m01s after its first line"
    assert clock.elapsed(snap, None, 1e9) == 481.0
    # watched live (the log's time is the time watched): the watched time, as before
    _events, live = replay(read_lines(READY_LOG), step=3.0)
    assert clock.verdict_after(live) == (live.verdict_elapsed, "")
    assert ready_words(live).startswith("in ")


def test_an_attach_to_a_running_launch_counts_from_its_first_line() -> None:
    lines = read_lines(READY_LOG, upto=60)  # loading weights; its first line at 09:40:03
    _events, snap = replay(lines, step=0.0)
    assert snap.state is State.STARTING and snap.elapsed < 2.0
    first = snap.phases[0].log_start
    assert first is not None
    # the latest stamped line is 5 minutes after the first, and arrived 3 s ago (the engine's clock)
    times = clock.LogTimes(first=first, last=first + 300.0, seen=1000.0)
    assert clock.elapsed(snap, times, 1003.0) == 303.0
    # a launch we watch from its start: the engine's own elapsed time
    assert clock.elapsed(replace(snap, elapsed=400.0), times, 1003.0) == 400.0


async def test_the_gauge_shows_the_live_eta_without_history() -> None:
    from textual.app import App, ComposeResult

    from symmtui.ui.widgets.gauge import ReadinessGauge
    from tests.ui.kit import settle, text

    class GaugeApp(App[None]):
        def compose(self) -> ComposeResult:
            yield ReadinessGauge(id="gauge")

    app = GaugeApp()
    meter = RateMeter()
    async with app.run_test(size=(60, 20)) as pilot:
        gauge = app.query_one(ReadinessGauge)
        for t, done in ((2.0, 16), (6.0, 24), (12.0, 37)):
            gauge.show(verdict(loading(done, t), meter))
        await settle(pilot)
        shown = text(app)
        assert "37/83 shards 2.1/s" in shown and "ETA about 22 s" in shown and "no history" not in shown
        gauge.show(verdict(loading(37, 12.5), meter, eta=100.0, runs=3))  # history: its ETA, never below the live rest
        await settle(pilot)
        assert "ETA 01:40 (from 3 earlier launches)" in text(app)
