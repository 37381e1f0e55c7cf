"""The dashboard's footer rebuilds its keys only when what it shows changes, and shows what Footer shows."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.footer import DashboardFooter
from symmtui.ui.widgets.gpu_panel import GpuTable
from tests.ui.kit import settle, starting_session, wait_for


def _keys(app: SymmApp) -> list[FooterKey]:
    return list(app.query_one(DashboardFooter).query(FooterKey).results())


async def test_footer_keys_are_built_once_and_again_only_when_they_change() -> None:
    app = SymmApp(starting_session(), tick=0)
    async with app.run_test(size=(120, 40)) as pilot:
        footer = app.query_one(DashboardFooter)
        await wait_for(pilot, lambda: len(_keys(app)) > 0, "the footer's keys")
        await settle(pilot)
        keys = _keys(app)
        assert [k.key for k in keys] == ["f", "slash", "e", "n", "N", "p", "r", "s", "q", "t", "ctrl+p"]
        assert footer.recomposes == 1  # start-up refreshes the bindings three times (mount, focus, app focus)

        for _ in range(3):  # refreshes that change nothing shown: the same key widgets stay
            app.screen.refresh_bindings()
        await settle(pilot)
        assert footer.recomposes == 1 and _keys(app) == keys

        app.query_one(GpuTable).focus()  # the log pane's f / e / n keys leave, the app's show (in its order)
        await wait_for(pilot, lambda: footer.recomposes == 2, "the keys rebuilt after the focus moved")
        assert [k.key for k in _keys(app)] == ["p", "r", "f", "slash", "e", "n", "N", "s", "q", "t", "ctrl+p"]
        assert {k.action for k in _keys(app)} >= {"log('toggle_follow')", "log('search')"}

        await pilot.resize_terminal(100, 40)  # narrow: compact keys, no palette key after the next refresh
        app.screen.refresh_bindings()
        await wait_for(pilot, lambda: "ctrl+p" not in [k.key for k in _keys(app)], "the palette key gone")
        assert footer.compact and footer.recomposes == 3
        assert all(k.has_class("-compact") for k in _keys(app))
