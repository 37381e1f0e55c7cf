"""Pilot tests for the log pane: a real log file appended by the test, indexed by the pane itself on its thread,
marked from the events of the real follower and event builder, keys pressed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.style import Style
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import Button

from symmtui.judge.events import EventBuilder
from symmtui.logs.follow import LogFollower, LogLine
from symmtui.ui.widgets import log_file
from symmtui.ui.widgets.footer import DashboardFooter
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

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[object, ...]] = []

    def compose(self) -> ComposeResult:
        yield LogView(id="log")
        yield Button("elsewhere", id="elsewhere")
        yield DashboardFooter()  # the dashboard's (the stock one restyles each key twice as it mounts)

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


def rows_in(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


class Feeder:
    """Appends to a real log file; the real follower and event builder read it and give the pane its events
    (as the engine does); the pane indexes the file itself."""

    def __init__(self, path: Path, view: LogView, pilot: Pilot[None], *, events: bool = True) -> None:
        self.path = path
        path.write_bytes(b"")
        self.view = view
        self.pilot = pilot
        self.follower = LogFollower(path)
        self.builder = EventBuilder()
        self.events = events
        view.view_file(path)

    def write(self, text: str) -> None:
        with open(self.path, "a", encoding="utf-8", newline="") as f:
            f.write(text)

    def write_lines(self, lines: list[str]) -> None:
        self.write("".join(line + "\n" for line in lines))

    async def pump(self) -> int:
        """What the engine does with a batch (the events), then wait until the pane has indexed the file."""
        n = 0
        while True:
            items = self.follower.poll()
            lines = [item for item in items if isinstance(item, LogLine)]
            if self.events:
                self.view.add_events([ev for line in lines if not line.progress for ev in self.builder.feed(line)])
            n += len(lines)
            if not self.follower.has_more:
                break
        self.view.poke()
        want = rows_in(self.path)
        await wait_for(self.pilot, lambda: self.view.line_count == want and self.view.settled,
                       f"the pane to index {want} rows")
        await self.pilot.pause()
        return n

    def close(self) -> None:
        self.follower.close()


async def start(pilot: Pilot[None], tmp_path: Path, lines: list[str] | None = None, *,
                events: bool = True) -> tuple[LogView, Feeder]:
    view = pilot.app.query_one(LogView)
    feeder = Feeder(tmp_path / "server.log", view, pilot, events=events)
    if lines:
        feeder.write_lines(lines)
    await feeder.pump()
    return view, feeder


def body(view: LogView) -> list[str]:
    """Visible lines with trailing padding removed."""
    return [line.rstrip() for line in view.visible_lines()]


def numbered(n: int, start: int = 1) -> list[str]:
    return [f"line {i:06d} loading layer {i % 61}" for i in range(start, start + n)]


def status(app: App[None]) -> str:
    return app.query_one("LogStatus").render().plain


async def settled(pilot: Pilot[None], view: LogView) -> None:
    await wait_for(pilot, lambda: view.settled, "the pane's scans")
    await pilot.pause()


# ---------------------------------------------------------------------------- follow


async def test_follows_the_end_and_shows_the_last_line(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(500))
        assert view.following
        assert body(view)[-1].endswith("line 000500 loading layer 12")
        feeder.write_lines(numbered(3, 501))
        await feeder.pump()
        assert body(view)[-1].endswith("line 000503 loading layer 15")
        assert "following" in status(app) and "503 lines" in status(app)
        feeder.close()


async def test_the_pane_reads_a_file_that_grows_without_being_told(tmp_path: Path) -> None:
    """No poke: the file thread looks at the file once a second on its own (a quiet engine, a log command)."""
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(5))
        feeder.write_lines(numbered(2, 6))
        await wait_for(pilot, lambda: view.line_count == 7, "the new rows without a poke")
        await pilot.pause()
        assert [row for row in body(view) if row][-1].endswith("line 000007 loading layer 7")
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
        await feeder.pump()
        assert body(view)[0] == top, "a paused pane must not move when lines arrive"
        assert "paused — 40 new lines" in status(app)
        await pilot.press("end")
        assert view.following
        assert app.seen[-1] == ("follow", True)
        assert body(view)[-1].endswith("line 000340 loading layer 35")
        assert "following" in status(app)
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
        await feeder.pump()
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
        await feeder.pump()
        assert body(view)[-1] == last
        await pilot.press("f")
        assert view.following
        assert body(view)[-1].endswith("line 000105 loading layer 44")
        assert [m for m in app.seen if m[0] == "follow"] == [("follow", False), ("follow", True)]
        feeder.close()


async def test_less_and_vim_keys_scroll(tmp_path: Path) -> None:
    """j / k a line, Space / b a screen, ctrl+d / ctrl+u half of one, g / G the ends, 120g line 120."""
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(1_000))
        height = view.lines.scrollable_content_region.height

        def top() -> int:
            return int(body(view)[0].split()[1])

        await pilot.press("g")
        assert top() == 1 and not view.following
        await pilot.press("j", "j", "j")
        assert top() == 4
        await pilot.press("k")
        assert top() == 3
        await pilot.press("space")
        assert top() == 3 + height - 1
        await pilot.press("b")
        assert top() == 3
        await pilot.press("ctrl+d")
        assert top() == 3 + height // 2
        await pilot.press("ctrl+u")
        assert top() == 3
        await pilot.press("G")
        assert view.following and body(view)[-1].endswith("line 001000 loading layer 24")
        await pilot.press("1", "2", "0", "g")
        assert view.cursor_line_no == 120 and "line 120" in status(app)
        assert any(row.startswith("▸ line 000120") for row in body(view))
        await pilot.press("7", "G")
        assert view.cursor_line_no == 7
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
        await wait_for(pilot, lambda: view.cursor_line_no == 10, "the error selected")
        assert any("▸ [2026-11-29 09:40:17 TP0] Scheduler hit an exception" in line for line in body(view))
        feeder.close()


async def test_footer_lists_the_keys_and_the_palette_entries_run(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(10))
        shown = {key for key, active in app.screen.active_bindings.items() if active.binding.show}
        assert {"f", "slash", "e", "n", "N"} <= shown
        await wait_for(pilot, lambda: {"f", "slash", "e", "n", "N"} <= {
            item.key for item in app.query("FooterKey")}, "the log view's keys in the footer")  # type: ignore[attr-defined]
        commands = {cmd.title: cmd for cmd in view.commands()}
        assert {"Log: search", "Log: filter in…", "Log: filter out…", "Log: clear filters", "Log: soft wrap on/off",
                "Log: fold tracebacks on/off", "Log: go to…", "Log: next error", "Log: first line"} <= set(commands)
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
        crash = view.lines.get_component_rich_style("log-view--crash")
        row = view.lines.render_line(head + 6)
        assert any(seg.text == "KeyError: 12" and seg.style and seg.style.color == crash.color for seg in row)
        plain = view.lines.render_line(head - 1)
        assert all(seg.style is None or seg.style.color != crash.color for seg in plain if seg.text.strip())
        assert view.error_count == 2  # the block and the sigquit line
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
        await settled(pilot, view)
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
        assert "3 errors · mark 2/3" in status(app)
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
        await settled(pilot, view)
        await pilot.press("n")
        assert view.cursor_line_no is None and view.following
        assert "no errors" in status(app)
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
        await settled(pilot, view)
        assert view.errors_only
        screen = [row for row in body(view) if row]
        assert screen[0] == "▶ KeyError: 12 at torch_symm_mem.py:83"
        assert all(row.startswith(("┃ ", "▶ ")) for row in screen)
        assert not any("loading layer" in row for row in screen)
        assert any("Device capability 12 not supported" in row for row in screen)
        assert "errors only" in status(app)
        # new error lines show up while filtered; ordinary ones do not
        feeder.write_lines(numbered(5, 251) + traceback_lines(4, "ValueError: bad shape"))
        await feeder.pump()
        screen = [row for row in body(view) if row]
        assert screen[-1] == "┃ ValueError: bad shape"
        assert "▶ ValueError: bad shape at torch_symm_mem.py:83" in screen
        assert not any("loading layer" in row for row in screen)
        await pilot.press("e")
        assert not view.errors_only
        assert any("loading layer" in row for row in body(view))
        feeder.close()


async def test_e_judges_the_lines_the_engine_did_not(tmp_path: Path) -> None:
    """The engine judges a big log's end only (its last launch): `e` judges the whole file itself."""
    lines = startup_lines() + traceback_lines(1) + numbered(300)
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, lines, events=False)  # no engine events at all
        assert view.error_count == 0
        await pilot.press("e")
        await settled(pilot, view)
        screen = [row for row in body(view) if row]
        assert screen[0] == "▶ KeyError: 12 at torch_symm_mem.py:83"
        assert screen[-1] == "┃ KeyError: 12" and len(screen) == 7
        assert view.error_count == 1
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
        await settled(pilot, view)
        assert view.cursor_line_no == 50  # wraps from the screen to the first match
        assert not view.following
        assert "▸ weights: shard 17 of 83 ready" in body(view)
        y = body(view).index("▸ weights: shard 17 of 83 ready")
        match = view.lines.get_component_rich_style("log-view--match")
        segs = list(view.lines.render_line(y))
        assert any(seg.text == "shard 17" and seg.style and seg.style.bgcolor == match.bgcolor for seg in segs)
        assert view.lines.has_focus and search.display
        assert "/shard 17/ 1 of 2" in status(app)
        await pilot.press("n")
        assert view.cursor_line_no == 300, "lower-case search ignores case"
        assert "/shard 17/ 2 of 2" in status(app)
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
        await settled(pilot, view)
        assert view.cursor_line_no == 300
        assert "/SHARD/ 1 of 1" in status(app)
        await pilot.press("escape")
        assert not search.display and view.search_text == ""
        assert view.lines.has_focus
        segs = list(view.lines.render_line(body(view).index("▸ weights: SHARD 17 of 83 ready again")))
        assert not any(seg.style and seg.style.bgcolor == match.bgcolor for seg in segs)
        feeder.close()


async def test_question_mark_searches_backwards_and_a_bad_regex_is_searched_as_text(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(200)
        lines[20] = "cuda graph [bs=8 done"
        lines[150] = "cuda graph [bs=16 done"
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("question_mark", *"graph [bs", "enter")  # "[bs" is no regex: the text itself
        await settled(pilot, view)
        assert view.cursor_line_no == 151, "? goes up from the screen: the last match above its bottom"
        assert "not a regex: searched as text" in status(app) or "/graph [bs/ 2 of 2" in status(app)
        await pilot.press("n")  # n goes on in the search's direction: up
        assert view.cursor_line_no == 21
        await pilot.press("N")
        assert view.cursor_line_no == 151
        # a regex: anchored at each line
        await pilot.press("slash", "ctrl+a", "ctrl+k", *"^line 0001[0-9]{2} ", "enter")
        await settled(pilot, view)
        assert "of 99" in status(app)  # lines 100-199 but line 151 (its text was replaced)
        feeder.close()


async def test_search_without_a_match_says_so(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(50))
        await pilot.press("slash", *"no such text", "enter")
        await settled(pilot, view)
        assert view.cursor_line_no is None and view.following
        assert "no match for 'no such text'" in status(app)
        feeder.close()


async def test_a_search_counts_every_match_of_a_big_file_and_keys_work_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_file, "CHUNK", 4096)  # many reports while counting
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(60_000)
        for i in range(3, 60_000, 7):
            lines[i] = f"retracted request {i}"
        view, feeder = await start(pilot, tmp_path, lines, events=False)
        await pilot.press("slash", *"retracted", "enter")
        app.post_message(events.Key("f9", None))
        await settled(pilot, view)
        assert ("probe", view.cursor_line_no) in app.seen or any(s[0] == "probe" for s in app.seen)
        assert f"of {len(range(3, 60_000, 7)):,}" in status(app) and "…" not in status(app)
        feeder.close()


async def test_keys_typed_into_search_do_not_trigger_pane_actions(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(5))
        await pilot.press("slash", "f", "e", "n", "N", "j", "g")
        assert view.following and not view.errors_only and view.cursor_line_no is None
        assert app.query_one("LogSearch").value == "fenNjg"  # type: ignore[attr-defined]
        feeder.close()


# ---------------------------------------------------------------------------- progress, big files, generations


async def test_carriage_return_progress_replaces_its_line_in_place(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, ["[2026-11-29 09:40:13 TP0] Load weight begin."])
        bar = "Loading safetensors checkpoint shards: {:3d}% Completed | {}/83"
        for i in (1, 2, 3):
            feeder.write("\r" + bar.format(i * 100 // 83, i))  # tqdm writes CR, then the bar
            await feeder.pump()
            rows = [row for row in body(view) if row]
            assert rows[-1] == "  " + bar.format(i * 100 // 83, i)
            assert view.line_count == 2, "a progress update must not add a line"
        feeder.write("\r" + bar.format(100, 83) + "\n[2026-11-29 09:40:20 TP0] Load weight end.\n")
        await feeder.pump()
        rows = [row for row in body(view) if row]
        assert rows[-2:] == ["  " + bar.format(100, 83), "  [2026-11-29 09:40:20 TP0] Load weight end."]
        assert view.line_count == 3
        feeder.close()


async def test_a_big_file_shows_its_end_first_and_every_line_from_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file past TAIL_FIRST: its rows are counted, its end indexed and shown, the rest filled in; every line
    keeps the file's number; memory is the offsets (8 bytes a line) and a flag byte."""
    monkeypatch.setattr(log_file, "TAIL_FIRST", 64 << 10)
    monkeypatch.setattr(log_file, "TAIL_BYTES", 16 << 10)
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(200_000), events=False)  # the index, not events
        index = view.index
        assert index.file is not None and index.file.head > 190_000, "indexed from its end first"
        assert body(view)[-1].endswith("line 200000 loading layer 42")
        assert index.memory_bytes() <= 9 * 200_000 + 4096
        await pilot.press("g")
        assert body(view)[0] == "  line 000001 loading layer 1"
        await pilot.press("colon", *"goto 123456", "enter")
        assert view.cursor_line_no == 123456
        assert f"▸ line 123456 loading layer {123456 % 61}" in body(view)
        feeder.close()


@pytest.mark.parametrize("ahead", [True, False], ids=["indexed-ahead", "not-ahead"])
async def test_a_log_indexed_ahead_is_on_the_panes_first_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: bool
) -> None:
    """The dashboard begins its log's index as it starts (``index_ahead``, while Textual starts up): the pane
    takes it, so the moment it is given the file (before its own thread has run) it has every row and shows the
    file's end; without it the rows come later from the pane's thread. Either way the rest is filled in."""
    monkeypatch.setattr(log_file, "TAIL_FIRST", 64 << 10)
    monkeypatch.setattr(log_file, "TAIL_BYTES", 16 << 10)
    path = tmp_path / "server.log"
    path.write_text("".join(f"{line}\n" for line in numbered(200_000)), encoding="utf-8")
    if ahead:
        assert log_file.index_ahead(path).wait(30)
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        view.view_file(path)
        assert view.line_count == (200_000 if ahead else 0)
        if ahead:
            assert body(view)[-1].endswith("line 200000 loading layer 42")
        await wait_for(pilot, lambda: view.line_count == 200_000 and view.settled, "the whole file indexed")
        with open(path, "a", encoding="utf-8") as fh:  # the file taken ahead is followed as it grows
            fh.write("line 200001 after the start\n")
        view.poke()
        await wait_for(pilot, lambda: view.line_count == 200_001, "the line written after the start")
        await pilot.press("g")
        assert body(view)[0] == "  line 000001 loading layer 1"


async def test_lines_with_escapes_tabs_and_unicode_are_read_back_as_shown(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(20_000)
        lines[100] = "\x1b[31mcoloured\x1b[0m line with\ttab and ünïcode"
        view, feeder = await start(pilot, tmp_path, lines, events=False)
        await pilot.press("g")
        screen = body(view)
        assert screen[0] == "  line 000001 loading layer 1"
        view.lines.scroll_to(y=95, animate=False, immediate=True, force=True)
        await pilot.pause()
        assert body(view)[5] == "  " + "coloured line with\ttab and ünïcode".expandtabs(8)
        await pilot.press("slash", *"line 000777", "enter")
        await settled(pilot, view)
        assert view.cursor_line_no == 777
        assert any(row == "▸ line 000777 loading layer 45" for row in body(view))
        await pilot.press("escape", "slash", *"coloured line", "enter")  # the text shown, not its bytes
        await settled(pilot, view)
        assert view.cursor_line_no == 101
        feeder.close()


async def test_a_file_that_is_not_there_yet_is_waited_for(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        path = tmp_path / "later.log"
        view.view_file(path)
        await wait_for(pilot, lambda: "no such file yet" in body(view)[0], "the pane to say it waits")
        path.write_text("at last\n")
        view.poke()
        await wait_for(pilot, lambda: view.line_count == 1, "the file once it exists")
        await pilot.pause()
        assert [row for row in body(view) if row] == ["  at last"]


async def test_a_new_file_clears_lines_errors_and_pause(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(100))
        await pilot.press("n")
        assert not view.following and view.error_count == 1
        feeder.close()
        feeder = Feeder(tmp_path / "second.log", view, pilot)
        await feeder.pump()
        assert view.following and view.error_count == 0 and view.line_count == 0
        feeder.write_lines(["[2026-11-29 09:50:00] second launch"])
        await feeder.pump()
        assert [row for row in body(view) if row] == ["  [2026-11-29 09:50:00] second launch"]
        feeder.close()


async def test_a_truncated_log_starts_the_pane_over(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(300))
        assert view.error_count == 1
        feeder.path.write_bytes(b"")  # copytruncate
        feeder.write_lines(["[2026-11-29 10:00:00] server_args=ServerArgs(after truncation)", "second"])
        await feeder.pump()
        assert [row for row in body(view) if row] == [
            "  [2026-11-29 10:00:00] server_args=ServerArgs(after truncation)",
            "  second",
        ]
        assert view.error_count == 0 and view.line_count == 2 and view.following
        assert "truncated" in status(app)
        feeder.close()


async def test_a_rotated_log_is_read_to_its_end_then_the_new_file(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(10))
        os.rename(feeder.path, tmp_path / "server.log.1")
        with open(tmp_path / "server.log.1", "a") as old:
            old.write("the old file's last line\n")
        view.poke()
        await wait_for(pilot, lambda: view.line_count == 11, "the old file's last line")
        feeder.path.write_text("the new file\n")
        view.poke()
        await wait_for(pilot, lambda: view.line_count == 1 and view.index.text(0) == "the new file",
                       "the new file at the path")
        feeder.close()


async def test_events_for_rows_not_indexed_yet_wait_for_them(tmp_path: Path) -> None:
    """The engine may read a line before the pane indexed it: its event is applied when the row comes."""
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(5))
        feeder.write_lines(traceback_lines(0))
        lines = [i for i in feeder.follower.poll() if isinstance(i, LogLine)]
        view.add_events([ev for line in lines for ev in feeder.builder.feed(line)])  # before any poke
        assert view.error_count == 0
        await feeder.pump()
        assert view.error_count == 1
        assert "▶ KeyError: 12 at torch_symm_mem.py:83" in body(view)
        feeder.close()


async def test_control_characters_and_cut_lines_render_safely(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path)
        feeder.write("bell\x07 and backspace\x08 here\n" + "x" * (log_file.CAP + 200) + "\n")
        await feeder.pump()
        rows = [row for row in body(view) if row]
        assert rows[0] == "  bell\\x07 and backspace\\x08 here"  # shown as text by the one sanitiser
        assert view.index.text(1) == "x" * log_file.CAP and view.index.cut(1)
        await pilot.press("w")
        assert "".join(row[2:] for row in body(view) if row).replace(" ", "").endswith("x…(linecut)")
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
        assert view.error_count == 2, "the block (its 7 copies folded) and the sigquit line are n/N stops"
        assert "· 2 errors ·" in status(app), status(app)
        await pilot.press("n")
        await settled(pilot, view)
        assert f"/{view.error_count}" in status(app).split("mark ")[1]
        feeder.close()


# ---------------------------------------------------------------------------- filters, counts, wrap, go-to

READY_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sglang-tp8-ready.log"


async def test_errors_only_on_a_clean_log_says_no_errors(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(20))
        await pilot.press("e")
        await settled(pilot, view)
        assert body(view)[0] == "  no errors in 20 lines (e shows everything)"
        assert "errors only (e)" in status(app)
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
        await settled(pilot, view)
        shown = [row for row in body(view) if row]
        assert shown and all("TP3]" in row for row in shown) and len(shown) == 11
        assert " in /tp3/ " in status(app) and f"{len(lines) - 11} hidden (X clears)" in status(app)
        await pilot.press("x", *"step [0-9]$", "enter")  # filter-out a regex: one-digit steps go
        await settled(pilot, view)
        shown = [row for row in body(view) if row]
        assert len(shown) == 9 and not any(row.endswith(("step 3", "step 7")) for row in shown)
        assert " in /tp3/ " in status(app) and " out /step [0-9]$/ " in status(app)
        await pilot.press("x", *"(", "enter")
        assert "bad filter-out '(': missing )" in status(app) and "(?m)" not in status(app)
        await pilot.press("X")
        assert "filters cleared" in status(app) and "hidden" not in status(app)
        assert view.index.view_len() == len(lines)
        await pilot.press("colon", *"filter-out Init torch", "enter")  # lnav's own words
        await settled(pilot, view)
        assert not any("Init torch" in row for row in body(view))
        feeder.close()


async def test_a_filter_keeps_a_record_whole(tmp_path: Path) -> None:
    """lnav's multi-line messages: `:filter-in TP0` keeps the frames of TP0's own traceback (they carry no
    prefix: they continue its record), and a filter-out hides a traceback whole."""
    lines = startup_lines() + traceback_lines(0) + traceback_lines(1, "ValueError: x")
    lines += ["[2026-11-29 09:40:20 TP1] a message over", "  two lines", "[2026-11-29 09:40:21 TP2] done"]
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, lines)
        await pilot.press("z")  # unfold: each rank's traceback its own block
        await pilot.press("colon", *"filter-in TP0", "enter")
        await settled(pilot, view)
        shown = [row for row in body(view) if row]
        assert shown[0].startswith("  [2026-11-29 09:40:09 TP0] Init torch")
        assert "┃ KeyError: 12" in shown and any('File "/opt/venv' in row for row in shown)
        assert not any("ValueError" in row for row in shown)
        await pilot.press("X", "colon", *"filter-in over$", "enter")  # a hit on a record's first line
        await settled(pilot, view)
        assert [row for row in body(view) if row] == ["  [2026-11-29 09:40:20 TP1] a message over", "    two lines"]
        await pilot.press("X", "colon", *"filter-out ValueError", "enter")
        await settled(pilot, view)
        shown = [row for row in body(view) if row]
        assert not any("TP1] Scheduler hit" in row for row in shown), "the traceback went whole"
        assert "┃ KeyError: 12" in shown and shown[-1].endswith("TP2] done")
        feeder.close()


async def test_filters_and_the_search_read_the_whole_file(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(5_000)
        for i in (10, 1_234, 4_990):
            lines[i] = f"needle at {i + 1}"
        view, feeder = await start(pilot, tmp_path, lines)
        view.add_filter(True, "needle")
        await settled(pilot, view)
        assert [row for row in body(view) if row] == ["  needle at 11", "  needle at 1235", "  needle at 4991"]
        assert "4,997 hidden" in status(app)
        feeder.write_lines(["a needle again", "nothing"])  # new lines are judged as they come
        await feeder.pump()
        assert [row for row in body(view) if row][-1] == "  a needle again"
        feeder.close()


async def test_search_counts_its_matches_and_n_walks_them(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        lines = numbered(3_000)
        hits = list(range(5, 2_990, 176))
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
        await pilot.press("right_square_bracket")  # errors keep their own keys (n / N are the search's)
        await settled(pilot, view)
        await pilot.press("right_square_bracket")
        assert "no errors" in status(app)
        await pilot.press("escape")
        assert view.search_text == "" and "/shard/" not in status(app)
        feeder.close()


WIDE = ("[2026-11-29 09:40:17 TP0] host='0.0.0.0' port=54891 模型加载完成 🚀 done\tnext " * 9)[:600]


@pytest.mark.parametrize("columns", [80, 120, 200])
async def test_soft_wrap_keeps_every_character(tmp_path: Path, columns: int) -> None:
    """A 600-character line with CJK, emoji and tabs, wrapped: every character once, in order, none cut."""
    app = LogApp()
    async with app.run_test(size=(columns, 40)) as pilot:
        view, feeder = await start(pilot, tmp_path, numbered(3) + [WIDE] + numbered(2, 4))
        await pilot.press("w")
        width = view.lines.text_width
        room = width - 2  # the gutter
        want: list[str] = [""]  # the pieces a wrap that keeps every character makes
        for ch in WIDE.expandtabs(8):
            if cell_len(want[-1]) + cell_len(ch) > room:
                want.append("")
            want[-1] += ch
        pieces = [strip.text for strip in view.lines.pieces(3, width)]
        assert len(pieces) == len(want) > 1
        assert [p[2:] for p in pieces] == [w + " " * (room - cell_len(w)) for w in want]
        assert "".join(want) == WIDE.expandtabs(8)
        # on screen as well: the line's pieces, in order, between its neighbours
        screen = body(view)
        first = next(i for i, row in enumerate(screen) if row.startswith("  [2026-11-29 09:40:17 TP0] host="))
        assert screen[first - 1].endswith("line 000003 loading layer 3")
        assert [row[2:] for row in screen[first : first + len(want)]] == [w.rstrip() for w in want]
        assert screen[first + len(want)].endswith("line 000004 loading layer 4")
        assert "wrap (w)" in status(app)
        feeder.close()


async def test_go_to_a_phase_a_log_time_a_time_since_the_start_and_a_line(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=SIZE) as pilot:
        view, feeder = await start(pilot, tmp_path, READY_FIXTURE.read_text(encoding="utf-8").splitlines())
        await pilot.press("colon", *"goto capturing CUDA graphs", "enter")
        assert view.cursor_line_no == 134 and "capturing CUDA graphs at line 134" in status(app)
        assert any(row.startswith("▸ ") and "Capture cuda graph begin" in row for row in body(view))
        await pilot.press("colon", *"goto weights", "enter")
        assert view.cursor_line_no == 18
        await pilot.press("colon", *"goto 09:47:25", "enter")
        assert view.cursor_line_no == 118 and "09:47:25 at line 118" in status(app)
        await pilot.press("colon", *"goto +7m22s", "enter")  # the first line is stamped 09:40:03
        assert view.cursor_line_no == 118
        await pilot.press("colon", *"60", "enter")  # vim's :60
        assert view.cursor_line_no == 60
        await pilot.press("colon", *"goto 1", "enter")
        assert view.cursor_line_no == 1 and body(view)[0].startswith("▸ ")
        await pilot.press("colon", *"ready", "enter")
        assert view.cursor_line_no == 166
        await pilot.press("colon", *"goto no such place", "enter")
        assert view.cursor_line_no == 166 and "nothing to go to for 'no such place'" in status(app)
        await pilot.press("colon", *"goto 9999", "enter")
        assert "line 9,999: the log has 166 lines" in status(app)
        feeder.close()


async def test_the_status_line_drops_whole_parts_when_narrow(tmp_path: Path) -> None:
    app = LogApp()
    async with app.run_test(size=(60, 20)) as pilot:
        view, feeder = await start(pilot, tmp_path, startup_lines() + traceback_lines(0) + numbered(3))
        await pilot.press("f", "w", "i", *"TP", "enter")
        await settled(pilot, view)
        shown = status(app)
        parts = app.query_one("LogStatus").parts()  # type: ignore[attr-defined]
        assert cell_len(shown) <= 60 and "…" not in shown
        kept = [p.text.plain for p in parts if p.text.plain in shown]
        assert shown == "".join(kept), "every part shown is whole"
        assert shown.startswith(" ❚❚ paused")
        feeder.close()
