"""SVG snapshots of the main states on fixed data and no clock (first run: --snapshot-update)."""

from __future__ import annotations

from typing import Any

import pytest

from symmtui.ui.app import SymmApp
from tests.ui.kit import crashed_session, ready_session, starting_session

WIDE = (120, 40)


def test_starting_with_progress(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(starting_session(), tick=0), terminal_size=WIDE)


def test_crashed_with_diagnosis(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(crashed_session(), tick=0), terminal_size=WIDE)


def test_ready(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(ready_session(), tick=0), terminal_size=WIDE)


def test_crashed_small_terminal(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(crashed_session(), tick=0), terminal_size=(80, 24))


def test_starting_large_terminal(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(starting_session(), tick=0), terminal_size=(200, 50))


@pytest.mark.parametrize("theme", ["symmtui-light", "symmtui-contrast"])
def test_crashed_in_other_themes(snap_compare: Any, theme: str) -> None:
    assert snap_compare(SymmApp(crashed_session(), theme=theme, tick=0), terminal_size=WIDE)
