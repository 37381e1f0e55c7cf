"""GPU plots: memory and utilisation per GPU over the last 10 minutes, phases marked on the time axis, from
real sampling rounds of the NVML stand-in."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.judge.readiness import PhaseSpan, Snapshot, State
from symmtui.ui.screens.plots import PlotsScreen
from symmtui.ui.widgets.plots import GpuHistory, bars, buckets, phase_marks, render_plots
from tests.ui.kit import text

T0 = 1_800_000_000.0  # the wall clock of the first round


def rounds() -> GpuHistory:
    """Ten minutes of rounds, 5 s apart: memory fills from minute 3 to minute 6 (the weights), util 0 then 90 %."""
    module = load_standin("rtx-pro-6000-x8-pcie")
    host = standin_host(module)
    nvml = Nvml(module)
    sampler = GpuSampler(nvml)
    history = GpuHistory()
    try:
        for k in range(121):
            t = k * 5.0
            host.set_load(min(1.0, max(0.0, (t - 180) / 180)), 4242)
            host.set_utilization(90.0 if t >= 420 else 0.0)
            snap = sampler.sample_once()
            history.add(GpuSnapshot(T0 + t, snap.infos, snap.samples, 0.0, None))
    finally:
        nvml.shutdown()
    return history


def ready_snapshot() -> Snapshot:
    phases = (PhaseSpan("loading weights", 180.0), PhaseSpan("capturing CUDA graphs", 420.0))
    # the engine's clock (monotonic) started at 0.0
    return Snapshot(State.STARTING, "capturing CUDA graphs", None, 500.0, 0.0, None, phases, (), (), (), None)


def test_bars_and_buckets() -> None:
    assert bars([0.0, 0.5, 1.0, None], 2) == ["  █ ", " ██ "]
    assert bars([0.25], 1) == ["▂"]
    assert buckets([(0.0, 1.0), (1.0, 3.0), (9.9, 5.0)], 0.0, 10.0, 2, last=False) == [2.0, 5.0]
    assert buckets([(0.0, 1.0), (1.0, 3.0)], 0.0, 10.0, 2, last=True) == [3.0, None]


def test_phase_marks_move_the_engines_clock_to_the_wall_clock() -> None:
    # now is monotonic 600.0 = wall T0 + 600: the engine's start (monotonic 0.0) was wall T0
    marks = phase_marks(ready_snapshot(), 600.0, T0 + 600.0)
    assert marks == [(T0 + 180.0, "loading weights"), (T0 + 420.0, "capturing CUDA graphs")]


def test_the_plots_show_memory_rising_in_the_weights_phase_with_the_phases_marked() -> None:
    history = rounds()
    marks = phase_marks(ready_snapshot(), 600.0, T0 + 600.0)
    lines = render_plots(history, marks, 130).plain.split("\n")
    assert "1 loading weights   2 capturing CUDA graphs" in lines[3], "the key above the charts"
    lines = lines[5:]
    assert lines[0].startswith("GPU 0  RTX PRO 6000") and "util 90 %" in lines[0]
    memory = lines[1:4]  # three rows, the top first
    top, bottom = memory[0][9:], memory[2][9:]
    width = len(bottom)
    start, end = int(width * 0.3), int(width * 0.6)  # minutes 3 and 6 of 10
    assert bottom[: start - 1].strip(" ┊") == "", "no memory before the weights began"
    assert set(bottom[end + 1 :]) == {"█"} and " " not in top[end + 1 :], "filled after (87 % of the memory)"
    # during the weights it rises: the bottom row starts with low blocks, the top row fills only near the end
    assert bottom[start + 1] in "▁▂▃" and top[start + 2] == " " and top[end - 1] != " "
    util = lines[4:7]
    assert set(util[2][9 : int(width * 0.7) - 1].replace("┊", " ")) == {" "} and "█" in util[2][-5:]
    # the phases: a ┊ column in every chart, a number under the axis, the legend
    assert memory[0][9 + start] == "┊"
    numbers = next(line for line in lines if line.startswith("phases"))
    assert numbers[9 + start] == "1" and numbers[9 + int(width * 0.7)] == "2"
    assert any("-10m" in line and "now" in line for line in lines[-3:]), "the axis again below"
    assert sum(1 for line in lines if line.startswith("GPU ")) == 8


class PlotApp(App[None]):
    def __init__(self, history: GpuHistory, marks: list[tuple[float, str]]) -> None:
        super().__init__()
        self.history, self.marks = history, marks

    def compose(self) -> ComposeResult:
        yield Static("dashboard")

    def on_mount(self) -> None:
        self.push_screen(PlotsScreen(self.history, self.marks))


async def test_the_plots_screen_opens_and_closes() -> None:
    app = PlotApp(rounds(), phase_marks(ready_snapshot(), 600.0, T0 + 600.0))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        title = app.screen.query_one("#plots-dialog").border_title
        assert title == "GPU memory and utilisation, the last 10 minutes (G)"
        assert "GPU 0  RTX PRO 6000" in text(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, PlotsScreen)
