"""The dashboard redraws what changed and no more: footer keys, log lines, the hidden process list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from textual.widgets._footer import FooterKey

from symmtui.core.decode import LogLine
from symmtui.gpu.results import GpuProcess
from symmtui.session.messages import GpuSample
from symmtui.ui.app import SymmApp
from symmtui.ui.bridge import GpuSamplePosted
from symmtui.ui.widgets.footer import DashboardFooter
from symmtui.ui.widgets.gpu_panel import GpuTable, ProcessList
from tests.ui.kit import FAKE_PID, settle, starting_session, wait_for


def _keys(app: SymmApp) -> list[FooterKey]:
    return list(app.query_one(DashboardFooter).query(FooterKey).results())


async def test_footer_keys_are_built_once_and_again_only_when_they_change() -> None:
    app = SymmApp(starting_session(), tick=0)
    async with app.run_test(size=(120, 40)) as pilot:
        footer = app.query_one(DashboardFooter)
        await wait_for(pilot, lambda: len(_keys(app)) > 0, "the footer's keys")
        await settle(pilot)
        keys = _keys(app)
        assert [k.key for k in keys] == ["f", "slash", "e", "n", "N", "p", "r", "s", "q", "question_mark", "t",
                                        "ctrl+p"]
        assert footer.recomposes == 1  # start-up refreshes the bindings three times (mount, focus, app focus)

        for _ in range(3):  # refreshes that change nothing shown: the same key widgets stay
            app.screen.refresh_bindings()
        await settle(pilot)
        assert footer.recomposes == 1 and _keys(app) == keys

        app.query_one(GpuTable).focus()  # the log pane's f / e / n keys leave, the app's show (in its order)
        await wait_for(pilot, lambda: footer.recomposes == 2, "the keys rebuilt after the focus moved")
        assert [k.key for k in _keys(app)] == ["p", "r", "f", "slash", "e", "n", "N", "s", "q",
                                                 "question_mark", "t", "ctrl+p"]
        assert {k.action for k in _keys(app)} >= {"log('toggle_follow')", "log('search')"}

        await pilot.resize_terminal(100, 40)  # narrow: compact keys, the important ones only, no palette key
        app.screen.refresh_bindings()
        await wait_for(pilot, lambda: "ctrl+p" not in [k.key for k in _keys(app)], "the palette key gone")
        assert footer.compact and footer.recomposes == 3
        assert all(k.has_class("-compact") for k in _keys(app))
        assert [k.key for k in _keys(app)] == ["p", "r", "f", "slash", "e", "n", "s", "q", "question_mark"]


def _count_layouts(app: SymmApp) -> Callable[[], int]:
    """How many times the screen was laid out (every widget placed again) from now on."""
    compositor = app.screen._compositor
    reflow = compositor.reflow
    count = [0]

    def counting(*args: Any) -> Any:
        count[0] += 1
        return reflow(*args)

    compositor.reflow = counting  # type: ignore[method-assign]
    return lambda: count[0]


def _lines(first: int, count: int, text: str = "Decode batch. #running-req: 1") -> list[LogLine]:
    return [LogLine(n, n * 100, f"[2026-11-29 10:00:00] {text} {n}", f"[2026-11-29 10:00:00] {text} {n}")
            for n in range(first, first + count)]


async def test_log_lines_move_the_scrollbar_without_laying_the_screen_out() -> None:
    app = SymmApp(starting_session(), tick=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        log = app.log_view
        lines = log.lines
        log.reset(None)  # short lines from here: no horizontal scrollbar
        await settle(pilot)
        assert not lines.show_horizontal_scrollbar
        layouts = _count_layouts(app)
        for k in range(5):  # five batches, each painted
            log.append_lines(_lines(1 + 10 * k, 10))
            await settle(pilot)
        assert layouts() == 0
        assert lines.virtual_size.height == log.index.view_len() == 50 > lines.size.height
        assert lines.vertical_scrollbar.window_virtual_size == 50
        assert lines.scroll_y == lines.max_scroll_y == 50 - lines.size.height and log.following
        assert "Decode batch. #running-req: 1 50" in log.visible_lines()[-1]

        log.append_lines(_lines(51, 1, "x" * 400))  # wider than the pane: its scrollbar appears, one layout
        await settle(pilot)
        assert lines.virtual_size.width > lines.size.width and lines.show_horizontal_scrollbar
        assert layouts() == 1
        assert lines.horizontal_scrollbar.window_virtual_size == lines.virtual_size.width
        assert lines.scroll_y == lines.max_scroll_y and "x" * 40 in log.visible_lines()[-2]


async def test_hidden_process_list_is_updated_without_a_layout_and_shown_whole() -> None:
    session = starting_session()
    app = SymmApp(session, tick=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        procs = app.query_one(ProcessList)
        assert not procs.display  # shown only while the GPU panel has the focus
        gpus = session.fixed_gpus
        assert gpus is not None
        sample = gpus.samples[0]
        more = tuple(GpuProcess(FAKE_PID + i, "python3", ("python3", f"worker-{i}"), 2**30) for i in range(4))
        snap = replace(gpus, samples=(replace(sample, processes=more), *gpus.samples[1:]))
        layouts = _count_layouts(app)
        app.post_message(GpuSamplePosted(GpuSample(snap, frozenset({FAKE_PID}), 12)))
        await settle(pilot)
        assert layouts() == 0
        app.query_one(GpuTable).focus()
        await settle(pilot)
        assert procs.display and procs.size.height == 1 + len(more)
        assert all(f"worker-{i}" in str(procs.render()) for i in range(4))
