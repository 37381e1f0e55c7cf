"""Pilot tests for the log pane: a real log file, the real follower and event builder, keys pressed."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.style import Style
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import Button, Footer

from symmtui.core.events import EventBuilder
from symmtui.core.follow import LogFollower, LogLine
from symmtui.ui.widgets.log_view import LogView
from tests.ui.kit import wait_for

SIZE = (120, 40)


def traceback_lines(rank: int, exc: str = "KeyError: 12") -> list[str]:
    """One rank's SGLang scheduler traceback, shaped like the real one."""
    return [
        f"[2026-11-29 09:40:17 TP{rank}] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2714, '
        "in run_scheduler_process",
        "    scheduler = Scheduler(",
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/distributed/device_communicators/'
        'torch_symm_mem.py", line 83, in __init__',
        "    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]",
        exc,
        "",
    ]


def startup_lines(ranks: int = 8) -> list[str]:
    out = ["[2026-11-29 09:40:03] server_args=ServerArgs(model_path='/models/m', tp_size=8)"]
    out += [f"[2026-11-29 09:40:09 TP{r}] Init torch distributed begin." for r in range(ranks)]
    return out


class LogApp(App[None]):
    """A tiny app: the log pane, a button to take focus elsewhere, a footer, and app-level keys."""

    BINDINGS = [
        Binding("ctrl+n", "forward('next_error')", "next error (app)"),
        Binding("ctrl+f", "forward('toggle_follow')", "follow (app)"),
        Binding("f9", "probe", "probe"),
    ]

    def __init__(self, **log_kw: int) -> None:
        super().__init__()
        self.log_kw = log_kw
        self.seen: list[tuple[object, ...]] = []

    def compose(self) -> ComposeResult:
        yield LogView(id="log", **self.log_kw)
        yield Button("elsewhere", id="elsewhere")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(LogView).focus()

    def action_probe(self) -> None:
        self.seen.append(("probe", self.query_one(LogView).cursor_line_no))

    def action_forward(self, action: str) -> None:
        getattr(self.query_one(LogView), f"action_{action}")()

    def on_log_view_follow_changed(self, message: LogView.FollowChanged) -> None:
        self.seen.append(("follow", message.following))

    def on_log_view_error_selected(self, message: LogView.ErrorSelected) -> None:
        self.seen.append(("error", message.line_no, message.summary))


class Feeder:
    """Appends to a real log file, reads it with the real follower, and feeds the pane lines and events."""

    def __init__(self, path: Path, view: LogView) -> None:
        self.path = path
        path.write_bytes(b"")
        self.view = view
        self.follower = LogFollower(path)
        self.builder = EventBuilder()
        view.reset(path)

    def write(self, text: str) -> None:
        with open(self.path, "a", encoding="utf-8", newline="") as f:
            f.write(text)

    def write_lines(self, lines: list[str]) -> None:
        self.write("".join(line + "\n" for line in lines))

    def pump(self) -> int:
        n = 0
        while True:
            items = self.follower.poll()
            lines = [item for item in items if isinstance(item, LogLine)]
            events = [ev for line in lines if not line.progress for ev in self.builder.feed(line)]
            self.view.append_lines(lines)
            self.view.add_events(events)
            n += len(lines)
            if not self.follower.has_more:
                return n

    def close(self) -> None:
        self.follower.close()


async def start(pilot: Pilot[None], tmp_path: Path, lines: list[str] | None = None) -> tuple[LogView, Feeder]:
    view = pilot.app.query_one(LogView)
    feeder = Feeder(tmp_path / "server.log", view)
    if lines:
        feeder.write_lines(lines)
        feeder.pump()
    await pilot.pause()
    return view, feeder


def body(view: LogView) -> list[str]:
    """Visible lines with trailing padding removed."""
    return [line.rstrip() for line in view.visible_lines()]


def numbered(n: int, start: int = 1) -> list[str]:
    return [f"line {i:06d} loading layer {i % 61}" for i in range(start, start + n)]


# ---------------------------------------------------------------------------- follow


async def test_follows_the_end_and_shows_the_last_line(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(500))
        assert view.following
        assert body(view)[-1].endswith("line 000500 loading layer 12")
        feeder.write_lines(numbered(3, 501))
        feeder.pump()
        await pilot.pause()
        assert body(view)[-1].endswith("line 000503 loading layer 15")
        status = app.query_one("LogStatus").render().plain
        assert "following" in status and "503 lines" in status
        feeder.close()


async def test_scrolling_up_pauses_and_reaching_the_end_resumes(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(300))
        await pilot.press("pageup")
        assert not view.following
        assert ("follow", False) in app.seen
        top = body(view)[0]
        feeder.write_lines(numbered(40, 301))
        feeder.pump()
        await pilot.pause()
        assert body(view)[0] == top, "a paused pane must not move when lines arrive"
        status = app.query_one("LogStatus").render().plain
        assert "paused — 40 new lines" in status
        await pilot.press("end")
        assert view.following
        assert app.seen[-1] == ("follow", True)
        assert body(view)[-1].endswith("line 000340 loading layer 35")
        assert "following" in app.query_one("LogStatus").render().plain
        feeder.close()


async def test_mouse_wheel_up_pauses(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(300))
        view.lines.post_message(events.MouseScrollUp(view.lines, 10, 10, 0, -1, 0, False, False, False))
        await pilot.pause()
        assert not view.following
        top = body(view)[0]
        feeder.write_lines(numbered(5, 301))
        feeder.pump()
        await pilot.pause()
        assert body(view)[0] == top
        feeder.close()


async def test_f_toggles_following(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(100))
        await pilot.press("f")
        assert not view.following
        last = body(view)[-1]
        feeder.write_lines(numbered(5, 101))
        feeder.pump()
        await pilot.pause()
        assert body(view)[-1] == last
        await pilot.press("f")
        assert view.following
        assert body(view)[-1].endswith("line 000105 loading layer 44")
        assert [m for m in app.seen if m[0] == "follow"] == [("follow", False), ("follow", True)]
        feeder.close()


async def test_app_level_keys_reach_the_pane_when_focus_is_elsewhere(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(5))
        app.query_one("#elsewhere", Button).focus()
        await pilot.pause()
        await pilot.press("ctrl+f")
        assert not view.following
        await pilot.press("ctrl+n")
        assert view.cursor_line_no == 10
        assert any("▸ [2026-11-29 09:40:17 TP0] Scheduler hit an exception" in line for line in body(view))
        feeder.close()


async def test_footer_lists_the_keys_and_the_palette_entries_run(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(10))
        shown = {key for key, active in app.screen.active_bindings.items() if active.binding.show}
        assert {"f", "slash", "e", "n", "N"} <= shown
        # the Footer composes its keys a refresh after the bindings change: wait for them, not one pause
        await wait_for(pilot, lambda: {"f", "slash", "e", "n", "N"} <= {
            item.key for item in app.query("FooterKey")}, "the log view's keys in the footer")  # type: ignore[attr-defined]
        commands = {cmd.title: cmd for cmd in view.commands()}
        assert {"Log: search", "Log: filter in…", "Log: filter out…", "Log: clear filters", "Log: soft wrap on/off",
                "Log: fold tracebacks on/off", "Log: go to…", "Log: next error"} <= set(commands)
        commands["Log: follow on/off"].callback()
        assert not view.following
        commands["Log: errors only"].callback()
        assert view.errors_only
        feeder.close()


# ---------------------------------------------------------------------------- tracebacks and errors


async def test_traceback_shows_as_one_block_under_its_summary(tmp_path: Path) -> None:
    lines = startup_lines()
    for rank in range(8):
        lines += traceback_lines(rank)
    lines.append("[2026-11-29 09:40:18] Received sigquit from a child process. It usually means the child failed.")
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("home")
        screen = body(view)
        # the 8 ranks' identical tracebacks are one block: the other 7 copies are folded under it
        head = screen.index("▶ KeyError: 12 at torch_symm_mem.py:83 ×8 ranks (7 copies folded: z)")
        assert screen[head - 1].endswith("TP7] Init torch distributed begin.")
        block = screen[head + 1 : head + 7]
        assert block[0].startswith("┃ [2026-11-29 09:40:17 TP0] Scheduler hit an exception")
        assert all(row.startswith("┃ ") for row in block)
        assert block[-1] == "┃ KeyError: 12"
        assert not any("TP1] Scheduler" in row for row in screen), "the copies are folded"
        assert screen[head + 7] == ""  # the blank lines between the copies went with them; the last one stays
        assert screen[head + 8].startswith("┃ [2026-11-29 09:40:18] Received sigquit")
        # crash rows are drawn in the crash style, ordinary rows are not
        crash = view.lines.get_component_rich_style("log-view--crash")
        row = view.lines.render_line(head + 6)
        assert any(seg.text == "KeyError: 12" and seg.style and seg.style.color == crash.color for seg in row)
        plain = view.lines.render_line(head - 1)
        assert all(seg.style is None or seg.style.color != crash.color for seg in plain if seg.text.strip())
        assert view.error_count == 2  # the block and the sigquit line
        # z unfolds: every copy is a block of its own, and an n/N stop
        await pilot.press("z", "home")
        screen = body(view)
        assert screen[head] == "▶ KeyError: 12 at torch_symm_mem.py:83 ×8 ranks"
        assert screen[head + 8] == "▶ KeyError: 12 at torch_symm_mem.py:83 (another copy; same as line 10)"
        assert screen[head + 9].startswith("┃ [2026-11-29 09:40:17 TP1] Scheduler hit an exception")
        assert view.error_count == 9
        await pilot.press("z")
        assert "▶ KeyError: 12 at torch_symm_mem.py:83 ×8 ranks (7 copies folded: z)" in body(view)
        feeder.close()


async def test_n_and_shift_n_walk_the_errors_and_wrap(tmp_path: Path) -> None:
    lines = startup_lines() + numbered(60)
    lines += traceback_lines(0, "torch.OutOfMemoryError: CUDA out of memory.")
    lines += numbered(60, 61)
    lines += ["[2026-11-29 09:41:00 TP0] RuntimeError: CUDA error: no kernel image is available for "
              "execution on the device"]
    lines += numbered(60, 121)
    lines += traceback_lines(3)
    lines += numbered(60, 181)
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, lines)
        assert view.error_count == 3
        await pilot.press("home")
        await pilot.press("n")
        assert not view.following
        assert view.cursor_line_no == 70
        assert "▶ torch.OutOfMemoryError: CUDA out of memory. at torch_symm_mem.py:83" in body(view)
        await pilot.press("n")
        assert view.cursor_line_no == 137
        assert any(row.startswith("▸ ") and "no kernel image" in row for row in body(view))
        await pilot.press("n")
        assert view.cursor_line_no == 198
        assert "▶ KeyError: 12 at torch_symm_mem.py:83" in body(view)
        await pilot.press("n")
        assert view.cursor_line_no == 70, "n wraps to the first error"
        await pilot.press("N")
        assert view.cursor_line_no == 198, "N wraps to the last error"
        await pilot.press("N")
        assert view.cursor_line_no == 137
        errors = [m for m in app.seen if m[0] == "error"]
        assert [m[1] for m in errors] == [70, 137, 198, 70, 198, 137]
        assert errors[0][2] == "torch.OutOfMemoryError: CUDA out of memory. at torch_symm_mem.py:83"
        assert "3 errors · mark 2/3" in app.query_one("LogStatus").render().plain
        feeder.close()


async def test_shift_n_from_the_end_selects_the_latest_error(tmp_path: Path) -> None:
    lines = startup_lines() + traceback_lines(0) + numbered(100) + traceback_lines(5, "ValueError: x")
    lines += numbered(100, 101)
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("N")
        assert view.cursor_line_no == len(startup_lines()) + 7 + 100 + 1
        feeder.close()


async def test_n_without_errors_says_so(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(20))
        await pilot.press("n")
        assert view.cursor_line_no is None and view.following
        assert "no errors" in app.query_one("LogStatus").render().plain
        feeder.close()


async def test_errors_only_filter(tmp_path: Path) -> None:
    lines = startup_lines() + numbered(100) + traceback_lines(2) + numbered(100, 101)
    lines.append("[2026-11-29 09:41:00 TP1] WARNING: TorchSymmMemCommunicator: Device capability 12 not "
                 "supported, communicator is not available.")
    lines += numbered(50, 201)
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("e")
        assert view.errors_only
        screen = [row for row in body(view) if row]
        assert screen[0] == "▶ KeyError: 12 at torch_symm_mem.py:83"
        assert all(row.startswith(("┃ ", "▶ ")) for row in screen)
        assert not any("loading layer" in row for row in screen)
        assert any("Device capability 12 not supported" in row for row in screen)
        assert "errors only" in app.query_one("LogStatus").render().plain
        # new error lines show up while filtered; ordinary ones do not
        feeder.write_lines(numbered(5, 251) + traceback_lines(4, "ValueError: bad shape"))
        feeder.pump()
        await pilot.pause()
        screen = [row for row in body(view) if row]
        assert screen[-1] == "┃ ValueError: bad shape"
        assert "▶ ValueError: bad shape at torch_symm_mem.py:83" in screen
        assert not any("loading layer" in row for row in screen)
        await pilot.press("e")
        assert not view.errors_only
        assert any("loading layer" in row for row in body(view))
        feeder.close()


# ---------------------------------------------------------------------------- search


async def test_search_highlights_and_enter_jumps_to_the_next_match(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(400)
        lines[49] = "weights: shard 17 of 83 ready"
        lines[299] = "weights: SHARD 17 of 83 ready again"
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("slash")
        search = app.query_one("LogSearch")
        assert search.has_focus and search.display
        await pilot.press(*"shard 17")
        await pilot.press("enter")
        assert view.cursor_line_no == 50  # wraps from the screen to the first match
        assert not view.following
        assert "▸ weights: shard 17 of 83 ready" in body(view)
        y = body(view).index("▸ weights: shard 17 of 83 ready")
        match = view.lines.get_component_rich_style("log-view--match")
        segs = list(view.lines.render_line(y))
        assert any(seg.text == "shard 17" and seg.style and seg.style.bgcolor == match.bgcolor for seg in segs)
        # Enter hands the keys to the pane: n / N walk the matches, the status line says which one
        assert view.lines.has_focus and search.display
        assert "/shard 17/ 1 of 2" in app.query_one("LogStatus").render().plain
        await pilot.press("n")
        assert view.cursor_line_no == 300, "lower-case search ignores case"
        assert "/shard 17/ 2 of 2" in app.query_one("LogStatus").render().plain
        await pilot.press("N")
        assert view.cursor_line_no == 50
        await pilot.press("slash")  # back in the box, its text kept: Up / Down walk the matches there
        assert search.has_focus and search.value == "shard 17"
        await pilot.press("down")
        assert view.cursor_line_no == 300
        await pilot.press("up")
        assert view.cursor_line_no == 50
        # a search with capitals is case-sensitive
        await pilot.press(*"ctrl+a ctrl+k".split())
        await pilot.press(*"SHARD")
        await pilot.press("enter")
        assert view.cursor_line_no == 300
        assert "/SHARD/ 1 of 1" in app.query_one("LogStatus").render().plain
        await pilot.press("escape")
        assert not search.display and view.search_text == ""
        assert view.lines.has_focus
        segs = list(view.lines.render_line(body(view).index("▸ weights: SHARD 17 of 83 ready again")))
        assert not any(seg.style and seg.style.bgcolor == match.bgcolor for seg in segs)
        feeder.close()


async def test_search_without_a_match_says_so(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(50))
        await pilot.press("slash", *"no such text", "enter")
        assert view.cursor_line_no is None and view.following
        assert "no match for 'no such text'" in app.query_one("LogStatus").render().plain
        feeder.close()


async def test_a_long_search_runs_in_slices_and_escape_cancels_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import symmtui.ui.widgets.log_index as log_index_module
    import symmtui.ui.widgets.log_view as log_view_module

    monkeypatch.setattr(log_view_module, "_SEARCH_SLICE", 0.0)  # give the loop back after every slice
    monkeypatch.setattr(log_index_module, "_SCAN_CHUNK", 4096)
    app = LogApp(ring=100)
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(30_000)
        lines[24_999] = "the needle is here"
        view, feeder = await start(pilot, tmp_path, lines)
        view.index.scan_yield_bytes = 4096
        # cancelled: the first slice runs now, the rest would run later
        view._set_needle("needle is")
        view.action_next_match()
        assert "searching for 'needle is'" in app.query_one("LogStatus").render().plain
        view.action_close_search()
        await pilot.pause()
        assert view.cursor_line_no is None and view.following
        # not cancelled: it finishes over many turns of the loop, keys keep working meanwhile
        await pilot.press("slash", *"needle is")
        view.action_next_match()  # what Enter does; pilot.press would wait for the whole search
        app.post_message(events.Key("f9", None))
        for _ in range(200):
            if view.cursor_line_no is not None:
                break
            await pilot.pause()
        assert ("probe", None) in app.seen, "a key was handled while the search was still scanning"
        assert view.cursor_line_no == 25_000
        assert "match at line 25,000" in app.query_one("LogStatus").render().plain
        feeder.close()


async def test_keys_typed_into_search_do_not_trigger_pane_actions(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(5))
        await pilot.press("slash", "f", "e", "n", "N")
        assert view.following and not view.errors_only and view.cursor_line_no is None
        assert app.query_one("LogSearch").value == "fenN"  # type: ignore[attr-defined]
        feeder.close()


# ---------------------------------------------------------------------------- progress, bursts, files


async def test_carriage_return_progress_replaces_its_line_in_place(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, ["[2026-11-29 09:40:13 TP0] Load weight begin."])
        bar = "Loading safetensors checkpoint shards: {:3d}% Completed | {}/83"
        for i in (1, 2, 3):
            feeder.write("\r" + bar.format(i * 100 // 83, i))  # tqdm writes CR, then the bar
            feeder.pump()
            await pilot.pause()
            rows = [row for row in body(view) if row]
            assert rows[-1] == "  " + bar.format(i * 100 // 83, i)
            assert view.line_count == 2, "a progress update must not add a line"
        feeder.write("\r" + bar.format(100, 83) + "\n[2026-11-29 09:40:20 TP0] Load weight end.\n")
        feeder.pump()
        await pilot.pause()
        rows = [row for row in body(view) if row]
        assert rows[-2:] == ["  " + bar.format(100, 83), "  [2026-11-29 09:40:20 TP0] Load weight end."]
        assert view.line_count == 3
        assert not any("Completed | 3/83" in row for row in rows)
        feeder.close()


async def test_burst_of_200k_lines_stays_bounded_and_shows_the_last_line(tmp_path: Path) -> None:
    app = LogApp(ring=2_000, max_rows=50_000)
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path)
        total = 0
        for chunk in range(20):
            feeder.write_lines(numbered(10_000, chunk * 10_000 + 1))
            total += feeder.pump()
            if chunk % 5 == 4:
                await pilot.pause()
        await pilot.pause()
        assert total == 200_000
        index = view.index
        assert index.rows <= 50_000
        assert index.end == 200_000
        assert index.memory_bytes() < 2_000_000
        assert body(view)[-1].endswith("line 200000 loading layer 42")
        assert view.following
        # the oldest kept line is read back from the file
        await pilot.press("home")
        first = index.no_for_row(index.base)
        assert first > 150_000
        assert body(view)[0] == f"  line {first:06d} loading layer {first % 61}"
        feeder.close()


async def test_lines_scrolled_far_up_are_read_back_from_the_file(tmp_path: Path) -> None:
    app = LogApp(ring=500)
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(20_000)
        lines[100] = "\x1b[31mcoloured\x1b[0m line with\ttab and ünïcode"
        view, feeder = await start(pilot, tmp_path, lines)
        assert view.index.text_base > 10_000, "old rows must have left memory"
        await pilot.press("home")
        screen = body(view)
        assert screen[0] == "  line 000001 loading layer 1"
        assert screen[5] == "  line 000006 loading layer 6"
        await pilot.press("n")  # no errors: nothing moves
        view.lines.scroll_to(y=95, animate=False, immediate=True, force=True)
        await pilot.pause()
        screen = body(view)
        assert screen[5] == "  " + "coloured line with\ttab and ünïcode".expandtabs(8)
        # search reaches rows that are only in the file
        await pilot.press("slash", *"line 000777", "enter")
        assert view.cursor_line_no == 777
        assert any(row == "▸ line 000777 loading layer 45" for row in body(view))
        feeder.close()


async def test_lines_without_a_readable_file_say_so(tmp_path: Path) -> None:
    app = LogApp(ring=100)
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(1_000))
        feeder.path.unlink()
        view.set_file(feeder.path)
        await pilot.press("home")
        assert "line 1 is no longer in memory and the log file is not readable" in body(view)[0]
        feeder.close()


async def test_reset_clears_lines_errors_and_pause(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(100))
        await pilot.press("n")
        assert not view.following and view.error_count == 1
        feeder.close()
        feeder = Feeder(tmp_path / "second.log", view)
        await pilot.pause()
        assert view.following and view.error_count == 0 and view.line_count == 0
        assert all(not row for row in body(view))
        feeder.write_lines(["[2026-11-29 09:50:00] second launch"])
        feeder.pump()
        await pilot.pause()
        assert [row for row in body(view) if row] == ["  [2026-11-29 09:50:00] second launch"]
        feeder.close()


async def test_a_truncated_log_starts_the_pane_over(tmp_path: Path) -> None:
    app = LogApp(ring=50)
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(300))
        assert view.error_count == 1
        feeder.path.write_bytes(b"")  # copytruncate
        feeder.pump()
        feeder.write_lines(["[2026-11-29 10:00:00] server_args=ServerArgs(after truncation)", "second"])
        feeder.pump()
        await pilot.pause()
        assert [row for row in body(view) if row] == [
            "  [2026-11-29 10:00:00] server_args=ServerArgs(after truncation)",
            "  second",
        ]
        assert view.error_count == 0 and view.line_count == 2 and view.following
        feeder.close()


async def test_lines_given_before_the_pane_is_mounted_are_shown_at_the_end(tmp_path: Path) -> None:
    view = LogView(id="log")
    path = tmp_path / "early.log"
    view.reset(path)
    view.append_lines([LogLine(i + 1, i * 20, f"early line {i + 1}", f"early line {i + 1}") for i in range(200)])

    class Early(App[None]):
        def compose(self) -> ComposeResult:
            yield view

    async with Early().run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert view.following
        assert body(view)[-1] == "  early line 200"


async def test_control_characters_and_cut_lines_render_safely(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path)
        feeder.follower.close()
        feeder.follower = LogFollower(feeder.path, max_line_bytes=64)
        feeder.write("bell\x07 and backspace\x08 here\n" + "x" * 200 + "\n")
        feeder.pump()
        await pilot.pause()
        rows = [row for row in body(view) if row]
        assert rows[0] == "  bell\\x07 and backspace\\x08 here"  # shown as text by the one sanitiser
        assert rows[1] == "  " + "x" * 64 + " …(line cut)"
        feeder.close()


# ---------------------------------------------------------------------------- themes


def _crash_colour(strip: Strip) -> Style | None:
    for seg in strip:
        if seg.text == "KeyError: 12":
            return seg.style
    return None


@pytest.mark.parametrize("theme", ["nord", "catppuccin-latte"])
async def test_theme_change_restyles_cached_lines(tmp_path: Path, theme: str) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0))
        y = body(view).index("┃ KeyError: 12")
        before = _crash_colour(view.lines.render_line(y))
        app.theme = theme
        await pilot.pause()
        after = _crash_colour(view.lines.render_line(y))
        assert before is not None and after is not None
        assert after.color != before.color
        assert after.color == view.lines.get_component_rich_style("log-view--crash").color
        feeder.close()


async def test_app_css_can_restyle_kinds_from_its_own_theme_variables(tmp_path: Path) -> None:
    class Styled(LogApp):
        CSS = "LogView .log-view--crash { color: $log-crash; }"

        def get_theme_variable_defaults(self) -> dict[str, str]:
            return {"log-crash": "#123456"}

    app = Styled()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0))
        style = _crash_colour(view.lines.render_line(body(view).index("┃ KeyError: 12")))
        assert style is not None and style.color is not None
        assert style.color.triplet is not None and style.color.triplet.hex == "#123456"
        feeder.close()


async def test_a_traceback_from_eight_ranks_counts_as_one_error_event(tmp_path: Path) -> None:
    """The status line counts the engine's events (one KeyError from 8 ranks), not the 8 marked blocks."""
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "sglang-tp8-symm-mem-keyerror.log"
    lines = fixture.read_text(encoding="utf-8").splitlines()
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, lines)
        status = app.query_one("LogStatus").render().plain
        assert view.error_count == 2, "the block (its 7 copies folded) and the sigquit line are n/N stops"
        # the engine's events: KeyError: 12 (one event, 8 ranks) and the secondary sigquit line
        assert "· 2 errors ·" in status, status
        await pilot.press("n")
        assert f"/{view.error_count}" in app.query_one("LogStatus").render().plain.split("mark ")[1]
        feeder.close()


# ---------------------------------------------------------------------------- filters, counts, wrap, go-to

READY_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sglang-tp8-ready.log"


def status(app: App[None]) -> str:
    return app.query_one("LogStatus").render().plain


async def test_errors_only_on_a_clean_log_says_no_errors(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(20))
        await pilot.press("e")
        assert body(view)[0] == "  no errors in 20 lines (e shows everything)"
        assert "no errors" in status(app) and "errors only (e)" in status(app)
        await pilot.press("e")
        assert [row for row in body(view) if row][-1].endswith("line 000020 loading layer 20")
        feeder.close()


async def test_filters_in_and_out_show_chips_with_the_hidden_count(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        lines = startup_lines() + [f"[2026-11-29 09:40:1{r % 10} TP{r % 4}] Load weight begin. step {r}"
                                   for r in range(40)]
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("i", *"tp3", "enter")  # lower case: any case, as the search
        await wait_for(pilot, lambda: not view.filtering, "the filter's rows")
        shown = [row for row in body(view) if row]
        assert shown and all("TP3]" in row for row in shown) and len(shown) == 11
        assert " in /tp3/ " in status(app) and f"{len(lines) - 11} hidden (X clears)" in status(app)
        await pilot.press("x", *"step [0-9]$", "enter")  # filter-out a regex: one-digit steps go
        await wait_for(pilot, lambda: not view.filtering, "the filter's rows")
        shown = [row for row in body(view) if row]
        assert len(shown) == 9 and not any(row.endswith(("step 3", "step 7")) for row in shown)
        assert " in /tp3/ " in status(app) and " out /step [0-9]$/ " in status(app)
        await pilot.press("x", *"(", "enter")
        assert "bad regex '('" in status(app)
        await pilot.press("X")
        assert "filters cleared" in status(app) and "hidden" not in status(app)
        assert view.index.view_len() == len(lines)
        # lnav's own words, on the command line
        await pilot.press("colon", *"filter-out Init torch", "enter")
        await wait_for(pilot, lambda: not view.filtering, "the filter's rows")
        assert not any("Init torch" in row for row in body(view))
        feeder.close()


async def test_a_filter_reads_lines_that_left_memory_back_from_the_file(tmp_path: Path) -> None:
    app = LogApp(ring=100)
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(5_000)
        for i in (10, 1_234, 4_990):
            lines[i] = f"needle at {i + 1}"
        view, feeder = await start(pilot, tmp_path, lines)
        assert view.index.text_base > 1_234
        view.add_filter(True, "needle")
        await wait_for(pilot, lambda: not view.filtering, "the filter's rows")
        assert [row for row in body(view) if row] == ["  needle at 11", "  needle at 1235", "  needle at 4991"]
        assert "4,997 hidden" in status(app)
        # new lines are judged as they come
        feeder.write_lines(["a needle again", "nothing"])
        feeder.pump()
        await pilot.pause()
        assert [row for row in body(view) if row][-1] == "  a needle again"
        feeder.close()


async def test_search_counts_its_matches_and_n_walks_them(tmp_path: Path) -> None:
    app = LogApp(ring=100)
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(3_000)
        hits = list(range(5, 2_990, 176))  # 17 of them, most out of memory
        assert len(hits) == 17
        for i in hits:
            lines[i] = f"shard {i} done"
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("home", "slash", *"shard", "enter")
        await wait_for(pilot, lambda: "1 of 17" in status(app), "the first match of 17")
        for _ in range(2):
            await pilot.press("n")
        await wait_for(pilot, lambda: view.cursor_line_no == hits[2] + 1, "the third match")
        assert "/shard/ 3 of 17" in status(app)
        await pilot.press("N")
        await wait_for(pilot, lambda: view.cursor_line_no == hits[1] + 1, "the second match")
        assert "/shard/ 2 of 17" in status(app)
        # errors keep their own keys: ] and [ (n / N are the search's while it is on)
        await pilot.press("right_square_bracket")
        assert "no errors" in status(app)
        await pilot.press("escape")
        assert view.search_text == "" and "/shard/" not in status(app)
        feeder.close()


async def test_soft_wrap_shows_a_long_line_whole_and_keeps_the_gutter(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        long = "[2026-11-29 09:40:17 TP0] " + " ".join(f"word{i:03d}" for i in range(40)) + " END"
        view, feeder = await start(pilot, tmp_path, numbered(5) + [long] + numbered(3, 6))
        cut = body(view)
        assert not any("END" in row for row in cut)
        await pilot.press("w")
        wrapped = body(view)
        first = next(i for i, row in enumerate(wrapped) if row.startswith("  [2026-11-29 09:40:17 TP0] word000"))
        assert wrapped[first + 2].endswith("END") and "word039" in wrapped[first + 2]
        assert wrapped[first + 1].startswith("  ") and wrapped[first + 3].endswith("line 000006 loading layer 6")
        assert "wrap (w)" in status(app)
        assert "".join(row[2:] for row in wrapped[first : first + 3]) == long
        await pilot.press("w")
        assert body(view) == cut
        feeder.close()


async def test_go_to_a_phase_a_log_time_a_time_since_the_start_and_a_line(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, READY_FIXTURE.read_text(encoding="utf-8").splitlines())
        await pilot.press("g", *"capturing CUDA graphs", "enter")
        assert view.cursor_line_no == 134 and "capturing CUDA graphs at line 134" in status(app)
        assert any(row.startswith("▸ ") and "Capture cuda graph begin" in row for row in body(view))
        await pilot.press("g", *"weights", "enter")
        assert view.cursor_line_no == 18
        await pilot.press("g", *"09:47:25", "enter")
        assert view.cursor_line_no == 118 and "09:47:25 at line 118" in status(app)
        await pilot.press("g", *"+7m22s", "enter")  # the first line is stamped 09:40:03
        assert view.cursor_line_no == 118
        await pilot.press("g", *"60", "enter")
        assert view.cursor_line_no == 60
        await pilot.press("colon", *"goto ready", "enter")
        assert view.cursor_line_no == 166
        await pilot.press("g", *"no such place", "enter")
        assert view.cursor_line_no == 166 and "nothing to go to for 'no such place'" in status(app)
        feeder.close()
