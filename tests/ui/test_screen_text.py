"""The tests' screen reader (tests/ui/screen_text.py) reads what Textual's public SVG screenshot shows, cell for
cell: the dashboard, the help over it, wide characters and tabs."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from symmtui.ui.app import SymmApp
from tests.ui.kit import crashed_session, settle, wait_for
from tests.ui.screen_text import screen_text, screen_text_svg


async def test_the_dashboard_and_the_help_over_it_read_as_the_svg_screenshot_shows_them() -> None:
    app = SymmApp(crashed_session())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "CRASHED" in screen_text(app)
        assert screen_text(app) == screen_text_svg(app)
        await pilot.press("f1")  # the keys' help, the dashboard behind it
        await wait_for(pilot, lambda: len(app.screen_stack) > 1, "the help screen")
        await settle(pilot)
        assert screen_text(app) == screen_text_svg(app)
        assert "Keys (F1 or h)" in screen_text(app)


class WideApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("漢字 wide ✖ and\ttab\nnext ünïcode line 🙂 end")


async def test_wide_characters_and_tabs_read_as_the_svg_screenshot_shows_them() -> None:
    app = WideApp()
    async with app.run_test(size=(60, 6)) as pilot:
        await settle(pilot)
        assert screen_text(app) == screen_text_svg(app)
        first, second = screen_text(app).splitlines()[:2]
        assert first.startswith("漢字 wide ✖ and ") and first.endswith(" tab") and "\t" not in first
        assert second == "next ünïcode line 🙂 end"
