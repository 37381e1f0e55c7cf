"""Screen edges at 80x24, 120x40 and 200x60: the header fits (what is cut says so), toasts never cover a
panel's border, the status line, the footer or a dialog's buttons, the log pane has no stray scrollbar mark
at 80 columns, and a stall's stacks dump says nothing of the hang once the server came up."""

from __future__ import annotations

import pytest
from msgspec.structs import replace
from textual.geometry import Region
from textual.widgets import Button

from symmtui.judge.readiness import State
from symmtui.session.messages import StacksTaken
from symmtui.stacks.report import StacksReport
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.widgets.header import StatusHeader
from symmtui.ui.widgets.log_view import LogLines, LogView
from symmtui.ui.widgets.stacks import StacksView
from tests.ui.kit import crashed_session, settle, text, wait_for

SIZES = [(80, 24), (120, 40), (200, 60)]
LONG = "the demo's server was stopped and its GPU memory released; relaunching with the profile's command now"


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_header_fits_and_says_where_it_cut(size: tuple[int, int]) -> None:
    app = SymmApp(crashed_session())
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        header = app.query_one(StatusHeader)
        shown = app.board
        assert shown is not None and shown.state is State.CRASHED
        header.show(replace(shown, headline="KeyError: 12 at torch_symm_mem.py:83 " + "x" * 200))
        await settle(pilot)
        line = text(app).splitlines()[0].rstrip()
        assert len(line) <= size[0]
        assert "✖ CRASHED" in line and line.rstrip().endswith(("…", "gpu-node-7", "glm5-tp8")), line
        assert "gpu-node-7" in line, "the host stays"
        header.show(replace(shown, headline="KeyError: 12 at torch_symm_mem.py:83"))
        await settle(pilot)
        line = text(app).splitlines()[0].rstrip()
        assert "KeyError: 12 at torch_symm_mem.py:83" in line and "…" not in line
        if size[0] >= 120:
            assert line.endswith("profile glm5-tp8")


def _borders(app: SymmApp) -> list[Region]:
    """The screen rows and columns of every panel's border and the pane's status line and the footer."""
    out: list[Region] = []
    for widget in app.screen.query("#gpus, #gauge, #diagnosis, #topology, .log-pane"):
        r = widget.region
        if not r.area or not widget.styles.border_top[0]:
            continue
        out += [Region(r.x, r.y, r.width, 1), Region(r.x, r.bottom - 1, r.width, 1),
                Region(r.x, r.y, 1, r.height), Region(r.right - 1, r.y, 1, r.height)]
    out += [w.region for w in app.screen.query("LogStatus, #footer")]
    return out


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_toasts_cover_no_border_no_status_line_and_no_dialog_button(size: tuple[int, int]) -> None:
    app = SymmApp(crashed_session())
    async with app.run_test(size=size, notifications=True) as pilot:  # run_test leaves toasts out by default
        await settle(pilot)
        app.notify(LONG, timeout=30)
        app.notify("theme: symmtui-dark", timeout=30)
        await wait_for(pilot, lambda: len(app.screen.query("Toast")) == 2, "two toasts")
        await settle(pilot)
        toasts = [t.region for t in app.screen.query("Toast")]
        lines = app.screen.query_one(LogLines).region
        for toast in toasts:
            assert not any(toast.overlaps(b) for b in _borders(app)), (toast, text(app))
            assert not toast.overlaps(app.query_one("#header").region), "the header's verdict stays readable"
            assert lines.contains_region(toast), "over the log pane's text"
        # over a dialog: at the top, clear of its buttons
        app.push_screen(ConfirmScreen("Relaunch?", "Stop the running server, then launch again:\n\n  " + "x" * 300,
                                      yes="Relaunch"))
        await settle(pilot)
        app.notify(LONG, timeout=30)
        await wait_for(pilot, lambda: bool(app.screen.query("Toast")), "a toast over the dialog")
        await settle(pilot)
        buttons = [b.region for b in app.screen.query(Button)]
        assert buttons and all(b.area for b in buttons)
        header = app.screen_stack[0].query_one("#header").region
        for toast in (t.region for t in app.screen.query("Toast")):
            assert not any(toast.overlaps(b) for b in buttons), text(app)
            assert not toast.overlaps(header), "the header's verdict stays readable under a toast"


async def test_no_stray_scrollbar_mark_in_the_log_pane_at_80_columns() -> None:
    app = SymmApp(crashed_session())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.query_one(LogView)
        pane = view.region
        rows = text(app).splitlines()[pane.y : pane.bottom]
        assert not any(set(row.strip()) <= set("▍▌▋▊▉█▏▎") and row.strip() for row in rows), "\n".join(rows)
        assert not view.lines.show_horizontal_scrollbar or view.lines.styles.scrollbar_size_horizontal == 0


def _dump(auto: bool) -> StacksTaken:
    report = StacksReport(1_800_000_000.0, 0.3, False, (), (), "init distributed", None,
                          "7/8 ranks finished init distributed; TP5 still init distributed",
                          gpus="GPUs: all 8 GPUs at 0 % (host side): nothing runs on them; the hang is in the host's "
                               "code (init, a peer, I/O, a lock)")
    return StacksTaken(report, None, auto)


def panel_text(app: SymmApp, widget: StacksView) -> str:
    """The words inside a panel, its wrapped lines joined."""
    r = widget.content_region
    rows = text(app).splitlines()[r.y : r.bottom]
    return " ".join(" ".join(row[r.x : r.right].split()) for row in rows)


async def test_a_stalls_stacks_say_nothing_of_the_hang_once_the_server_is_ready() -> None:
    app = SymmApp(crashed_session())
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.query_one(StacksView)
        view.show(_dump(auto=True))
        await settle(pilot)
        assert "the hang is in the host's code" in panel_text(app, view)
        view.show_state(State.STARTING)  # moving again: the dump stays, its reading of the hang goes
        await settle(pilot)
        assert "because the state became STALLED" in panel_text(app, view)
        assert "the stall is over: the server is STARTING now" in panel_text(app, view)
        assert "the hang is in the host's code" not in panel_text(app, view) and "7/8 ranks" in panel_text(app, view)
        view.show_state(State.READY)
        await settle(pilot)
        assert "the server is READY now (s: a fresh dump)" in panel_text(app, view)
        assert "taken at" in panel_text(app, view) and "because the state became STALLED" in panel_text(app, view)
        assert "7/8 ranks" not in panel_text(app, view) and "the hang is in" not in panel_text(app, view)
        view.show(_dump(auto=False))  # a fresh dump on s: shown whole
        await settle(pilot)
        assert "the hang is in the host's code" in panel_text(app, view)


async def test_a_dump_taken_on_s_says_when_and_why_and_is_not_called_a_stalls() -> None:
    """On a healthy server s used to say "taken at …, while stalled" and show no frames."""
    app = SymmApp(crashed_session())
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.query_one(StacksView)
        view.show(_dump(auto=False), state=State.READY)
        view.show_state(State.READY)
        await settle(pilot)
        said = panel_text(app, view)
        assert "on s (the server was READY)" in said and "stalled" not in said and "7/8 ranks" in said
