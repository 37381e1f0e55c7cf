"""Files symmtui reads from outside, made FIFOs, devices and huge files for real: every verb that reads
them (`wait`, `scan`, `history`, `launch`, `stop`) ends at once with one line and exit 2; `launch`
starts nothing. Before the boundary readers a FIFO there blocked each of them forever."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from symmtui import boundary, paths
from symmtui.launch.history import History, HistoryEntry, history_path
from symmtui.tables.catalogue import load_file, user_file
from tests.faults.hostile_kit import one_error_line, run_cli
from tests.launch.helpers import demo_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")


MAKERS: dict[str, Callable[[Path], None]] = {"fifo": _fifo, "device": _device}
SAYS = {"fifo": "FIFO (named pipe)", "device": "character device"}


@pytest.fixture
def log(tmp_path: Path) -> Path:
    copy = tmp_path / "run" / "server.log"
    copy.parent.mkdir()
    shutil.copy(FIXTURES / "sglang-tp8-ready.log", copy)
    return copy


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("verb", ["wait", "scan", "launch", "stop"])
def test_a_user_catalogue_that_is_a_fifo_or_device_is_one_line(tmp_path: Path, log: Path, kind: str, verb: str) -> None:
    MAKERS[kind](user_file())
    cfg = demo_config(tmp_path)
    args = {"wait": ["wait", "--log", str(log), "--no-record"], "scan": ["scan", str(log)],
            "launch": ["launch", "--config", str(cfg), "--no-record"], "stop": ["stop", "--config", str(cfg)]}[verb]
    line = one_error_line(run_cli(*args, timeout=60))
    assert "the user catalogue" in line and SAYS[kind] in line and "or remove it" in line, line
    assert not (tmp_path / "logs").exists(), "launch started the server"


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("verb", ["launch", "stop"])
def test_a_default_profile_that_is_a_fifo_or_device_is_named(tmp_path: Path, kind: str, verb: str) -> None:
    """./symmtui.toml a FIFO or a device: one line naming it (it said "no launch profile: create ./symmtui.toml")."""
    MAKERS[kind](tmp_path / "symmtui.toml")
    line = one_error_line(run_cli(verb, cwd=tmp_path, timeout=60))
    assert "symmtui.toml is not a regular file" in line and "no launch profile" not in line, line


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("verb", ["history", "launch", "stop"])
def test_a_history_that_is_a_fifo_or_device_is_one_line_and_launches_nothing(tmp_path: Path, kind: str, verb: str) -> None:
    MAKERS[kind](history_path())
    cfg = demo_config(tmp_path)
    args = {"history": ["history"], "launch": ["launch", "--config", str(cfg), "--no-record"],
            "stop": ["stop", "--config", str(cfg)]}[verb]
    r = run_cli(*args, timeout=60)
    line = one_error_line(r)
    assert r.returncode == 2 and "the launch history" in line and SAYS[kind] in line and "remove it" in line, line
    assert not (tmp_path / "logs").exists(), "launch started the server"
    assert not list(paths.state_dir("launch").glob("*.json")), "a launch was recorded"


def test_a_history_that_becomes_a_fifo_is_refused_on_append_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "history.jsonl"
    os.mkfifo(fifo)
    entry = HistoryEntry("l1", "h", 1.0, 2.0, "ready")
    for act in (lambda: History(fifo).append(entry), lambda: History(fifo).append_once(entry),
                lambda: History(fifo).entries()):
        with pytest.raises(boundary.InputError, match="FIFO"):
            act()


def test_a_huge_history_is_read_from_its_end_only(tmp_path: Path) -> None:
    """A history of 40 MiB (far past years of launches): its last 8 MiB are read, from a line start."""
    path = tmp_path / "history.jsonl"
    line = json.dumps(HistoryEntry("old", "h", 1.0, 2.0, "ready").to_json()).encode() + b"\n"
    with open(path, "wb") as fh:
        fh.write(line * ((40 << 20) // len(line)))
        fh.write(json.dumps(HistoryEntry("newest", "h", 1.0, 9.0, "ready").to_json()).encode() + b"\n")
    h = History(path)
    entries = h.entries()
    assert [e.launch_id for e in entries] == ["old", "newest"] and h.skipped == 0
    assert h.estimate("h") is not None


def test_history_lines_too_long_or_nested_too_deep_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    good = json.dumps(HistoryEntry("ok", "h", 1.0, 2.0, "ready").to_json())
    path.write_text("\n".join(["[" * 200_000, '{"launch_id": "' + "x" * 100_000 + '"}', good]) + "\n")
    h = History(path)
    assert [e.launch_id for e in h.entries()] == ["ok"] and h.skipped == 2


def test_a_huge_user_catalogue_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.toml"
    path.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    with pytest.raises(boundary.InputError, match="larger than 1024 KiB"):
        load_file(path)


def test_a_missing_catalogue_or_config_folder_gives_no_entries(tmp_path: Path) -> None:
    assert load_file(tmp_path / "nope" / "catalogue.toml") == ()
    (tmp_path / "file").write_text("")
    assert load_file(tmp_path / "file" / "catalogue.toml") == ()


def test_a_launch_state_or_stop_note_that_is_a_fifo_never_blocks_stop(tmp_path: Path) -> None:
    cfg = demo_config(tmp_path)
    from symmtui.launch.profile import load_profile
    from symmtui.launch.state import state_path

    _fifo(state_path(load_profile(cfg).key))
    line = one_error_line(run_cli("stop", "--config", str(cfg), timeout=60))
    assert "FIFO (named pipe)" in line, line
