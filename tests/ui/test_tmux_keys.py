"""issue 24's habits in a real terminal: keys typed with tmux send-keys, the screen read with capture-pane.

The demo's crash (8 ranks' tracebacks): help, search with its count and n, folds, filters, wrap, go to a
phase, the process view and its confirmation, the plots, the palette. A finished log attached: its own
clock, `e` on a log without errors, the footer at 80 columns. A running launch attached: the time since its
first line."""

from __future__ import annotations

import re
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.test_tmux import Pane, _quit_and_check_nothing_is_left, _tmux, session  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.xdist_group("tmux"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"),
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.timeout(240)
def test_the_log_pane_help_and_palette_keys_in_tmux(session: tuple[Pane, Path, str]) -> None:  # noqa: F811
    pane, tmpdir, marker = session
    pane.wait(r"CRASHED", 60)
    pane.wait(r"×8 ranks \(7 copies folded: z\)", 30)  # one block for the 8 ranks' identical tracebacks
    pane.keys("?")
    pane.wait(r"Keys \(\? or F1\)", 15)
    pane.wait(r"the processes on the GPUs; k / K signal one", 5)
    pane.keys("Escape")
    pane.gone(r"Keys \(\? or F1\)")
    # search: the count, then n walks the matches
    pane.keys("/")
    pane.wait(r"search the log \(Enter", 10)  # the box has the keys (a key sent before it had them is the pane's)
    pane.keys("init torch", "Enter")  # each rank's line: 8 (the folded copies hold no match of it)
    first = int(re.search(r"/init torch/ (\d) of 8", pane.wait(r"/init torch/ \d of 8", 15)).group(1))  # type: ignore[union-attr]
    pane.keys("n")
    pane.wait(rf"/init torch/ {first % 8 + 1} of 8", 15)
    pane.keys("Escape")
    pane.gone(r"/init torch/")
    # unfold, fold
    pane.keys("End", "z")  # following: the last rank's copy is on screen once unfolded
    pane.wait(r"\(another copy; same", 15)
    pane.keys("z")
    pane.wait(r"copies folded", 15)
    # filter in, as a chip with the hidden count; then cleared
    pane.keys("i")
    pane.wait(r"filter in: show only lines", 10)
    pane.keys("TP3", "Enter")
    pane.wait(r" in /TP3/ +[\d,]+ hidden", 15)
    pane.keys("X")
    pane.wait(r"filters cleared", 15)
    # wrap; go to a phase
    pane.keys("w")
    pane.wait(r"wrap \(w\)", 15)
    pane.keys("w", "g")
    pane.wait(r"go to: a line", 10)
    pane.keys("init distributed", "Enter")
    pane.wait(r"init distributed at line \d+", 15)
    # the palette holds the actions
    pane.keys("C-p")
    time.sleep(0.5)
    pane.keys("Process view")
    pane.wait(r"Process view", 15)
    for _ in range(3):  # the palette's first Escape may only clear its list
        pane.keys("Escape")
        time.sleep(0.5)
        if not re.search(r"Search for commands|Memory and utilisation, the last", pane.text()):
            break
    _quit_and_check_nothing_is_left(pane, tmpdir, marker)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("session", ["hang"], indirect=True)
def test_the_process_view_and_the_plots_in_tmux(session: tuple[Pane, Path, str]) -> None:  # noqa: F811
    """The hang story: its 8 ranks hold GPU memory while they wait."""
    pane, tmpdir, marker = session
    pane.wait(r"STALLED", 60)
    pane.keys("P")
    pane.wait(r"● ours", 20)  # the demo's ranks are this launch's
    screen = pane.wait(r"GPU mem ▼", 5)
    assert screen.count("● ours") >= 1
    pane.keys("k")
    pane.wait(r"Send SIGTERM to pid \d+\?", 15)
    pane.wait(r"one of this launch's processes", 5)
    pane.keys("n")
    pane.gone(r"Send SIGTERM to pid")
    pane.keys("Escape")
    pane.gone(r"● ours")
    pane.keys("G")
    pane.wait(r"GPU memory and utilisation, the last 10 minutes", 15)
    pane.wait(r"1 launching", 10)  # the phases, on the time axis's legend
    pane.wait(r"now", 5)
    pane.keys("Escape")
    pane.gone(r"the last 10 minutes")
    _quit_and_check_nothing_is_left(pane, tmpdir, marker)


@pytest.fixture
def attached(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Pane, Path]]:
    """`symmtui --log LOG` in an 80x24 tmux pane (the NVML stand-in), LOG a copy of a fixture's first lines."""
    fixture, upto = request.param
    log = tmp_path / "server.log"
    lines = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:upto]), encoding="utf-8")
    name = f"symmtui-keys-{uuid.uuid4().hex[:8]}"
    env = (f"env -u COLUMNS -u LINES SYMMTUI_NVML_STANDIN=rtx-pro-6000-x8-pcie TERM=tmux-256color XDG_STATE_HOME={tmp_path / 'state'} "
           f"XDG_CONFIG_HOME={tmp_path / 'config'}")
    _tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24",
          f"{env} {sys.executable} -m symmtui --log {log} --no-record")
    try:
        yield Pane(name), log
    finally:
        _tmux("kill-session", "-t", name)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("attached", [("sglang-tp8-ready.log", None)], indirect=True)
def test_a_finished_log_on_its_own_clock_and_e_without_errors_at_80_columns(attached: tuple[Pane, Path]) -> None:
    pane, _log = attached
    screen = pane.wait(r"READY", 30)
    screen = pane.wait(r"READY  8m01s after its first line", 10)
    assert "00:00" not in screen.splitlines()[0]
    screen = pane.wait(r"q Quit", 10)  # the footer composes once the bindings are ready, a moment after
    footer = screen.rstrip("\n").splitlines()[-1]
    assert "? Keys" in footer and "q Quit" in footer  # the important keys, and where the rest are
    pane.keys("e")
    pane.wait(r"no errors in 166 lines \(e shows everything\)", 15)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("attached", [("sglang-tp8-ready.log", 110)], indirect=True)
def test_an_attach_to_a_running_launch_counts_from_its_first_line(attached: tuple[Pane, Path]) -> None:
    """The log's first line is stamped 09:40:03, its latest 09:47:23: 7m20s into the bring-up, not 00:00."""
    pane, _log = attached
    screen = pane.wait(r"elapsed 0?7:2\d", 30)
    assert "STARTING" in screen
