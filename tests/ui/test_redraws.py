"""The dashboard redraws what changed and no more: log lines and the hidden process list ask for no layout;
the footer shows the keys of what has the focus."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace
from textual.widget import Widget
from textual.widgets import Footer

from symmtui.gpu.results import GpuProcess
from symmtui.session.messages import GpuRound
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.gpu_panel import GpuTable, ProcessList
from tests.ui.kit import FAKE_PID, settle, starting_session, text, wait_for


def _footer(app: SymmApp) -> str:
    """The footer's keys as the screen shows them (its last line)."""
    return text(app).splitlines()[-1]


async def test_the_footer_shows_the_focused_widgets_keys_and_drops_the_palette_when_narrow() -> None:
    app = SymmApp(starting_session())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "q Quit" in _footer(app), "the footer's keys")
        keys = _footer(app)
        assert keys.index("f Follow") < keys.index("/ Find") < keys.index("p Patch") < keys.index("s Stacks")
        assert keys.index("q Quit") < keys.index("t Theme") and "^p palette" in keys
        app.query_one(GpuTable).focus()  # the log pane's keys follow the app's (in its order)
        def app_order() -> bool:
            keys = _footer(app)
            return "p Patch" in keys and "f Follow" in keys and keys.index("p Patch") < keys.index("f Follow")

        await wait_for(pilot, app_order, "the keys in the app's order after the focus moved")
        await pilot.resize_terminal(100, 40)  # narrow: compact keys, no palette key, q still shown
        # the palette key goes, then the keys are cut to the important ones (F1 lists the rest): a frame apart
        await wait_for(pilot, lambda: "palette" not in _footer(app) and "t Theme" not in _footer(app),
                       "the palette key and the minor keys gone")
        keys = _footer(app)
        assert "q Quit" in keys and app.query_one(Footer).compact
        assert "F1 Keys" in keys and "s Stacks" in keys, keys


def _count_layouts(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """How many layouts widgets ask for from now on (``Widget.refresh(layout=True)``, Textual's public way
    to ask the screen to place its widgets again)."""
    count = [0]
    refresh = Widget.refresh

    def counting(self: Widget, *regions: Any, layout: bool = False, **kw: Any) -> Widget:
        count[0] += layout
        return refresh(self, *regions, layout=layout, **kw)

    monkeypatch.setattr(Widget, "refresh", counting)
    return lambda: count[0]


def _write(path: Path, first: int, count: int, text: str = "Decode batch. #running-req: 1") -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(f"[2026-11-29 10:00:00] {text} {n}\n" for n in range(first, first + count)))


async def test_log_lines_move_the_scrollbar_without_laying_the_screen_out(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    """Lines appended to the file the pane follows: its scrollbar moves, the screen is not laid out again."""
    app = SymmApp(starting_session())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        log = app.log_view
        lines = log.lines
        path = tmp_path / "short.log"
        path.write_text("")
        log.view_file(path)  # short lines from here: no horizontal scrollbar
        await wait_for(pilot, lambda: log.settled, "the new file indexed")
        await settle(pilot)
        assert not lines.show_horizontal_scrollbar
        layouts = _count_layouts(monkeypatch)
        for k in range(5):  # five batches, each painted
            _write(path, 1 + 10 * k, 10)
            log.poke()
            await wait_for(pilot, lambda k=k: log.line_count == 10 * (k + 1) and log.settled, "the batch")  # type: ignore[misc]
            await settle(pilot)
        assert layouts() == 0
        assert lines.virtual_size.height == log.index.view_len() == 50 > lines.size.height
        assert lines.vertical_scrollbar.window_virtual_size == 50
        assert lines.scroll_y == lines.max_scroll_y == 50 - lines.size.height and log.following
        assert "Decode batch. #running-req: 1 50" in log.visible_lines()[-1]

        _write(path, 51, 1, "x" * 400)  # wider than the pane: its scrollbar appears, a layout
        log.poke()
        await wait_for(pilot, lambda: log.line_count == 51 and lines.show_horizontal_scrollbar, "the wide line")
        await settle(pilot)
        assert lines.virtual_size.width > lines.size.width and lines.show_horizontal_scrollbar
        assert layouts() >= 1
        assert lines.horizontal_scrollbar.window_virtual_size == lines.virtual_size.width
        assert lines.scroll_y == lines.max_scroll_y and "x" * 40 in log.visible_lines()[-2]


async def test_hidden_process_list_is_updated_without_a_layout_and_shown_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    session = starting_session()
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        procs = app.query_one(ProcessList)
        assert not procs.display  # shown only while the GPU panel has the focus
        gpus = session.fixed_gpus
        assert gpus is not None
        sample = gpus.samples[0]
        more = tuple(GpuProcess(FAKE_PID + i, "python3", ("python3", f"worker-{i}"), 2**30) for i in range(4))
        snap = replace(gpus, samples=(replace(sample, processes=more), *gpus.samples[1:]))
        layouts = _count_layouts(monkeypatch)
        session.mailbox.put(GpuRound(snap, frozenset({FAKE_PID}), 12))
        await settle(pilot)
        assert layouts() == 0
        app.query_one(GpuTable).focus()
        await settle(pilot)
        assert procs.display and procs.size.height == 1 + len(more)
        assert all(f"worker-{i}" in str(procs.render()) for i in range(4))
