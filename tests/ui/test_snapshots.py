"""SVG snapshots of the main states on fixed data and no clock (first run: --snapshot-update)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from symmtui.ui.app import SymmApp
from tests.ui.kit import crashed_session, ready_session, starting_session

WIDE = (120, 40)


def test_starting_with_progress(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(starting_session()), terminal_size=WIDE)


def test_crashed_with_diagnosis(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(crashed_session()), terminal_size=WIDE)


def test_ready(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(ready_session()), terminal_size=WIDE)


def test_crashed_small_terminal(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(crashed_session()), terminal_size=(80, 24))


def test_starting_large_terminal(snap_compare: Any) -> None:
    assert snap_compare(SymmApp(starting_session()), terminal_size=(200, 50))


@pytest.mark.parametrize("theme", ["symmtui-light", "symmtui-contrast"])
def test_crashed_in_other_themes(snap_compare: Any, theme: str) -> None:
    assert snap_compare(SymmApp(crashed_session(), theme=theme), terminal_size=WIDE)


def _snapshot_names() -> set[str]:
    """The snapshot each test above compares against: its name, with the parameter for parametrized ones."""
    names: set[str] = set()
    for name, fn in list(globals().items()):
        if not name.startswith("test_") or "snap_compare" not in inspect.signature(fn).parameters:
            continue
        params = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        names.update({f"{name}[{value}]" for m in params for value in m.args[1]} if params else {name})
    return names


def test_every_snapshot_file_belongs_to_a_test() -> None:
    """syrupy fails a one-process run on a snapshot no test uses, but skips that check under pytest-xdist
    (the default here): the check, done here."""
    files = {p.stem for p in (Path(__file__).parent / "__snapshots__" / "test_snapshots").glob("*.svg")}
    assert files == _snapshot_names()
