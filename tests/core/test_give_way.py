"""A key typed in a dashboard holds the engine's reading and judging back until the frame that shows it
(boundary.give_way): nothing is judged meanwhile, all of it after; and the app always lets the engine go on."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui import boundary
from symmtui.bringup.engine import Bringup
from symmtui.judge.readiness import ReadinessConfig, State
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.help import HelpScreen
from tests.ui.kit import crashed_session, settle, wait_for

from .engine_kit import READY_LOG

NEVER = 600.0  # KEY_WAIT in these tests: a wait that ends only because something released it


@pytest.fixture
def unbounded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(boundary, "KEY_WAIT", NEVER)
    try:
        yield
    finally:
        boundary.key_shown()


def _gate_open() -> bool:
    """Whether give_way returns without a key_shown (joined for 30 s: a held gate would hold it NEVER)."""
    t = threading.Thread(target=boundary.give_way)
    t.start()
    t.join(30)
    return not t.is_alive()


def test_nothing_waits_unless_a_key_was_typed(unbounded: None) -> None:
    assert _gate_open()


def test_the_engine_judges_nothing_until_the_key_is_shown(unbounded: None, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(READY_LOG.read_text())
    parked = threading.Event()
    real = boundary.give_way

    def give_way() -> None:
        parked.set()
        real()

    monkeypatch.setattr(boundary, "give_way", give_way)
    boundary.key_typed()
    lines: list[str] = []
    b = Bringup(log, config=ReadinessConfig(timeout=120),
                on_update=lambda up: lines.extend(ln.text for ln in up.lines))
    b.start()
    try:
        assert parked.wait(30)  # the engine's thread is at the gate
        assert b.snapshot().state is State.WAITING and not lines
        boundary.key_shown()
        snap = b.wait_final(30)
    finally:
        b.stop()
    assert snap.state is State.READY
    assert len(lines) == len(READY_LOG.read_text().splitlines())


async def test_a_key_holds_the_engine_until_its_frame_and_quitting_lets_it_go(
        unbounded: None, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    typed, shown = boundary.key_typed, boundary.key_shown
    monkeypatch.setattr(boundary, "key_typed", lambda: (said.append("typed"), typed()))
    monkeypatch.setattr(boundary, "key_shown", lambda: (said.append("shown"), shown()))
    app = SymmApp(crashed_session())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        said.clear()
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        await wait_for(pilot, lambda: said == ["typed", "shown"], f"the key's frame drawn: {said}")
        boundary.key_typed()  # a key whose frame never comes: the app's end opens the gate
    assert _gate_open()
