"""Pilot tests: every dashboard key and the modals, on fixed data from the real engine code."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from symmtui.demo.sandbox import sandbox_has_capability, write_sandbox
from symmtui.gpu.facts import PatchFacts
from symmtui.judge.readiness import State
from symmtui.judge.verdict import PATCHED_ACTION
from symmtui.session.patching import Patcher
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.screens.patch import PatchScreen
from symmtui.ui.widgets.diagnosis import DiagnosisView
from symmtui.ui.widgets.gpu_panel import GpuTable, ProcessList
from symmtui.ui.widgets.log_view import LogView
from tests.handclock import HandClock
from tests.ui.kit import (
    FAKE_PID,
    answer,
    crashed_session,
    send_keys,
    settle,
    starting_session,
    text,
    toasts,
    wait_for,
)


async def test_crashed_dashboard_state_and_its_keys_in_one_app() -> None:
    """One app start (each a third of a CPU-second) for what a crashed dashboard shows and its keys do, in
    turn: the cause and action; t cycles themes and the palette lists the actions; p and r without a target
    say why; a modal swallows the dashboard's keys; the confirm modal's keys; s dumps stacks; q quits."""
    from textual.widgets import Footer

    from symmtui.ui.widgets.stacks import StacksView

    app = SymmApp(crashed_session(), clock=HandClock())  # a yes "at once" is at once whatever the load
    said = toasts(app)
    answers: list[bool | None] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        # the crashed state shows its cause and the action
        screen = text(app)
        assert "CRASHED" in screen
        assert "KeyError: 12 at torch_symm_mem.py:83" in screen
        assert "press p to apply the SM120 patch" in screen
        assert "SGLang lacks compute capability 12" in screen
        assert app.board is not None and app.board.state is State.CRASHED

        # t cycles the themes back to the start; the palette lists the actions
        assert app.theme == "symmtui-dark"
        seen = []
        for _ in app.theme_names:
            await pilot.press("t")
            seen.append(app.theme)
        assert set(seen) >= {"symmtui-dark", "symmtui-light", "symmtui-contrast"}
        assert app.theme == "symmtui-dark"  # back to the start after a full cycle
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Apply SM120 patch", "Relaunch", "Next theme", "Theme: symmtui-contrast",
                       "Log: follow on/off", "Log: search", "Log: errors only", "Log: next error",
                       "Log: previous error", "Quit"):
            assert wanted in titles, wanted

        # p without a patch target says why
        said.clear()
        await pilot.press("p")
        await settle(pilot)
        assert not isinstance(app.screen, PatchScreen)
        assert any("symmtui patch" in n for n in said)

        # r without a profile says why; a modal swallows the dashboard's keys
        said.clear()
        await pilot.press("r")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("server.command" in n for n in said)
        # a modal swallows the dashboard's keys: t does not change the theme behind it
        app.push_screen(ConfirmScreen("Quit?", "test"))
        await settle(pilot)
        before = app.theme
        await pilot.press("t")
        assert app.theme == before
        await pilot.press("escape")
        assert not isinstance(app.screen, ConfirmScreen)

        # the confirm modal's keys; a yes that comes within KEY_GUARD of the question is ignored (typed ahead)
        for key, expected in (("y", True), ("enter", True), ("n", False), ("escape", False)):
            app.push_screen(ConfirmScreen("Sure?", "body"), answers.append)
            await settle(pilot)
            await answer(pilot, key)
            await settle(pilot)
            assert answers[-1] is expected, key
        app.push_screen(ConfirmScreen("Sure?", "body"), answers.append)
        await send_keys(pilot, "y")  # at once: ignored
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and len(answers) == 4
        await answer(pilot, "y")  # once the question has been up KEY_GUARD: answered
        await settle(pilot)
        assert answers[-1] is True and not isinstance(app.screen, ConfirmScreen)

        # s shows in the footer and dumps into the stacks panel
        footer = app.query_one(Footer)
        assert any(b.key == "s" and b.description == "Stacks" for b in footer.query("FooterKey").results())
        assert "s Stacks" in text(app)
        view = app.query_one(StacksView)
        assert view.taken is None and not view.display
        await pilot.press("s")
        await wait_for(pilot, lambda: view.taken is not None, "the dump on the s key")
        # a fixed session has no server process: the panel says so in one line
        assert view.display and view.border_subtitle.endswith("on s")
        assert "no server process known" in text(app)

        # q quits
        await pilot.press("q")
        await settle(pilot)
    assert app.return_value == 0


async def test_log_keys_follow_search_errors_next_previous() -> None:
    app = SymmApp(crashed_session())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        log = app.query_one(LogView)
        assert log.following and log.line_count == 122
        await pilot.press("f")
        assert not log.following
        await pilot.press("f")
        assert log.following

        await pilot.press("e")
        assert log.errors_only
        await pilot.press("e")
        assert not log.errors_only

        assert log.error_count >= 1
        await pilot.press("n")
        first = log.cursor_line_no
        assert first is not None
        await pilot.press("n")
        second = log.cursor_line_no
        assert second is not None and second != first
        await pilot.press("N")
        assert log.cursor_line_no == first

        await pilot.press("slash")
        search = app.query_one(Input)
        assert search.display and search.has_focus
        await pilot.press(*"sigquit")
        await pilot.press("enter")
        await settle(pilot)
        assert log.search_text == "sigquit"
        assert log.cursor_line_no == 122



async def test_keys_typed_fast_after_slash_are_the_searchs_text_and_act_on_nothing(tmp_path: Path) -> None:
    """/prr as a fast typist (or `tmux send-keys -l`) sends it: p and r must not open the patch modal or the
    relaunch question while the search box is opening; they are its text."""
    from symmtui.ui.widgets.log_view import LogSearch

    sandbox = write_sandbox(tmp_path / "site")
    session = crashed_session(
        patcher=Patcher(site=sandbox.site, package="sglang", facts=lambda: PatchFacts.given((12, 0), nvlink=False)))
    app = SymmApp(session, clock=HandClock())  # the keys after / come within OPENING whatever the load
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await send_keys(pilot, "slash", "p", "r", "r")
        search = app.query_one(LogSearch)
        await wait_for(pilot, lambda: search.has_focus and search.value == "prr", "the keys in the search box")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, PatchScreen | ConfirmScreen)
        await send_keys(pilot, "p")  # with the box focused, p is text too
        await wait_for(pilot, lambda: search.value == "prrp", "p typed into the box")
        await pilot.press("escape")  # the box closes: p is the patch key again
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PatchScreen), "the patch modal on p")


async def test_tab_and_shift_tab_only_switch_the_log_and_the_gpu_table_while_a_search_is_on() -> None:
    """A search on keeps its box open under the pane (n / N walk it). Textual's own tab / shift+tab (the
    Screen's focus_next / focus_previous, found before the app's binding) walked every focusable widget: tab
    from the log, or shift+tab from the GPU table, put the focus in the box, and s was typed into it (no dump)."""
    from symmtui.ui.widgets.log_view import LogLines, LogSearch
    from symmtui.ui.widgets.stacks import StacksView

    app = SymmApp(crashed_session())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        box = app.query_one(LogSearch)
        await pilot.press("slash", *"init", "enter")
        await settle(pilot)
        assert app.query_one(LogView).search_text == "init"
        assert box.display and isinstance(app.focused, LogLines)  # the box stays open; the pane has the keys
        for key, then in [("tab", GpuTable), ("tab", LogLines), ("shift+tab", GpuTable), ("shift+tab", LogLines),
                          ("tab", GpuTable), ("shift+tab", LogLines), ("shift+tab", GpuTable)]:
            await pilot.press(key)
            assert isinstance(app.focused, then), f"{key}: the focus is on {app.focused!r}, not a {then.__name__}"
        await pilot.press("s")
        await wait_for(pilot, lambda: app.query_one(StacksView).display and "Stacks (s)" in text(app),
                       "the stacks panel on s (painted)")
        assert box.value == "init"  # s was not typed into the box


async def test_theme_option_starts_in_that_theme() -> None:
    app = SymmApp(crashed_session(), theme="symmtui-contrast")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.theme == "symmtui-contrast"
        assert app.get_css_variables()["state-crashed"].upper() == "#FF0000"


async def test_gpu_selection_shows_its_processes_ours_vs_strangers() -> None:
    app = SymmApp(starting_session())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.query_one(GpuTable)
        table.focus()
        await settle(pilot)
        procs = app.query_one(ProcessList)
        assert procs.display
        await pilot.press("down", "down")
        assert table.cursor == 2
        await settle(pilot)
        rendered = str(procs.render())
        assert "GPU 2 processes" in rendered
        assert str(FAKE_PID) in rendered and "ours" in rendered


async def test_strangers_are_marked() -> None:
    session = starting_session()
    session.fixed_ours = frozenset()  # nothing is ours: the load's pid is a stranger
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.query_one(GpuTable).focus()
        await settle(pilot)
        assert "stranger" in str(app.query_one(ProcessList).render())


async def test_patch_modal_shows_diff_applies_and_offers_revert(tmp_path: Path) -> None:
    sandbox = write_sandbox(tmp_path / "site")
    session = crashed_session(
        patcher=Patcher(site=sandbox.site, package="sglang", facts=lambda: PatchFacts.given((12, 0), nvlink=False)))
    app = SymmApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PatchScreen), "the patch modal")
        modal = app.screen
        assert isinstance(modal, PatchScreen)
        await wait_for(pilot, lambda: modal.view is not None, "the patch check")
        await wait_for(pilot, lambda: "+    12: {" in text(app), "the diff on screen")
        screen = text(app)
        assert "lacks key in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES" in screen
        assert "+    12: {" in screen  # the exact diff
        assert not sandbox_has_capability(sandbox.site, 12)
        scroll = modal.query_one("#patch-diff-scroll")
        # the key scrolls what is laid out: wait until the diff has its height in the box
        await wait_for(pilot, lambda: modal.query_one("#patch-diff").size.height > 1, "the diff laid out")
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: scroll.scroll_y > 0 or scroll.max_scroll_y == 0, "pagedown to scroll the diff")
        await pilot.press("n")  # cancel: nothing changed
        await wait_for(pilot, lambda: not isinstance(app.screen, PatchScreen), "the modal closed on n")
        assert not sandbox_has_capability(sandbox.site, 12)

        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PatchScreen), "the patch modal again")
        modal = app.screen
        assert isinstance(modal, PatchScreen)
        await wait_for(pilot, lambda: modal.view is not None, "the patch check")
        await wait_for(pilot, lambda: "Apply (y)" in text(app), "the apply button")
        await answer(pilot)
        await wait_for(pilot, lambda: modal.result is not None, "the apply")
        assert sandbox_has_capability(sandbox.site, 12)
        await wait_for(pilot, lambda: "applied" in text(app), "the apply result")
        # the modal checks again and shows the tables as they are now, with one way out
        # one wait for the whole picture: the new label draws at once, the hidden button leaves at the next
        # layout (a screenshot between the two shows both buttons)
        await wait_for(pilot, lambda: "has key in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES" in (screen := text(app))
                       and "lacks key" not in screen and "Close (y)" in screen and "Close (n)" not in screen,
                       "the re-check and its one close button")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, PatchScreen), "the modal closed on enter")
        assert session.patched and app.board is not None and app.board.patched
        # the diagnosis now points at the next step (the app redraws it when it handles PatchChanged)
        view = app.query_one(DiagnosisView)
        await wait_for(pilot, lambda: bool(view.items) and view.items[0].action == PATCHED_ACTION,
                       "the diagnosis to point at the relaunch")
        assert "press r to relaunch" in PATCHED_ACTION

        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PatchScreen), "the patch modal a third time")
        modal = app.screen
        assert isinstance(modal, PatchScreen)
        await wait_for(pilot, lambda: modal.view is not None, "the second check")
        assert modal.view is not None and modal.view.can_revert
        await wait_for(pilot, lambda: "Revert (y)" in text(app), "the revert button")
        await answer(pilot)
        await wait_for(pilot, lambda: modal.result is not None, "the revert")
        assert not sandbox_has_capability(sandbox.site, 12)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PatchScreen), "the modal closed on escape")




