"""The help screen lists every active key with what it does now; the narrow footer shows the important keys."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding

from symmtui.ui.screens.help import HelpRow, HelpScreen, help_rows
from symmtui.ui.widgets.footer import DashboardFooter
from symmtui.ui.widgets.log_view import LogView
from tests.ui.kit import settle, wait_for


class KeysApp(App[None]):
    BINDINGS = [
        Binding("p", "patch", "Patch", tooltip="Apply the SM120 patch"),
        Binding("r", "relaunch", "Relaunch"),
        Binding("t", "theme", "Theme"),
        Binding("question_mark", "help", "Keys", key_display="?"),
    ]

    def compose(self) -> ComposeResult:
        yield LogView(id="log")
        yield DashboardFooter(id="footer", narrow_keys=frozenset({"p", "question_mark"}))

    def on_mount(self) -> None:
        self.query_one(LogView).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "relaunch" else True  # None: shown, but disabled now

    def action_help(self) -> None:
        self.push_screen(HelpScreen(help_rows(self.screen, note=lambda a: "no profile" if a == "relaunch" else None,
                                              extra=[HelpRow("dialogs", "y  n", "yes, no")])))


async def test_help_lists_every_key_with_what_it_does_now() -> None:
    app = KeysApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        help_text = screen.text()
        import re

        assert re.search(r"\n  p +apply the SM120 patch\n", help_text)  # the tooltip, when there is one
        assert re.search(r"\n  r +relaunch  \(no profile\)\n", help_text)  # what the app says of it now
        assert help_text.index("dashboard") < help_text.index("the log pane")
        assert "scroll Up" not in help_text
        assert "Escape" in help_text and "ctrl+p" in help_text
        # the log pane's own keys (focused), with what they do
        assert re.search(r"the log pane\n(.*\n)*  n +next search match \(while a search is on\), else the next error",
                         help_text)
        assert re.search(r"\n  i +show only lines matching a regex", help_text) and "dialogs" in help_text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_narrow_footer_shows_only_the_important_keys() -> None:
    app = KeysApp()
    async with app.run_test(size=(120, 40)) as pilot:
        footer = app.query_one(DashboardFooter)
        await wait_for(pilot, lambda: {"p", "t"} <= {k.key for k in app.query("FooterKey")}, "every key, wide")
        footer.compact = True
        await settle(pilot)
        await wait_for(pilot, lambda: {k.key for k in app.query("FooterKey")} <= {"p", "question_mark", "ctrl+p"},
                       "only the important keys, narrow")
        assert "question_mark" in {k.key for k in app.query("FooterKey")}
        footer.compact = False
        await wait_for(pilot, lambda: "t" in {k.key for k in app.query("FooterKey")}, "every key again")
