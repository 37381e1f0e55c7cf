"""The keys in a real terminal: keys typed with tmux send-keys, the screen read with capture-pane.

The demo's crash (8 ranks' tracebacks): the help screen is read off the screen and every key it lists is typed,
each checked by what it shows; then the README's keys (p, y, r, y) to READY, and ctrl+c quits. A finished log
attached: its own clock, `e` on a log without errors, the footer at 80 columns, q. A running launch attached:
the time since its first line. At 120x40 the status line drops whole parts, never a hint cut in two."""

from __future__ import annotations

import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.ui.test_tmux import Pane, _demo_pids, _quit_and_check_nothing_is_left, _tmux, session  # noqa: F401

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.xdist_group("tmux"),
    pytest.mark.needs("tmux"),  # skipped with the reason where it is missing; a failure in CI
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TMUX_NAMES = {"/": "/", "?": "?", "^c": "C-c", "^d": "C-d", "^u": "C-u", "↓": "Down", "↑": "Up", "←": "Left",
              "→": "Right", "space": "Space", "pgdn": "PageDown", "pgup": "PageUp", "home": "Home", "end": "End",
              "esc": "Escape", "tab": "Tab", "shift+tab": "BTab", "enter": "Enter"}
"""How the help shows a key -> how tmux send-keys names it (a letter is itself)."""


def help_keys(screen: str) -> list[tuple[str, str]]:
    """(section, key as shown) of every row of the help dialog on ``screen`` (between its ``█`` borders)."""
    rows: list[tuple[str, str]] = []
    section = ""
    for line in screen.splitlines():
        if line.count("█") < 2:
            continue
        inner = line[line.index("█") + 1 : line.rindex("█")].rstrip()
        if re.fullmatch(r" [a-z][a-zA-Z ()]+", inner):
            section = inner.strip()
            continue
        m = re.match(r"   (\S(?:\S| (?! ))*)  +\S", inner)
        if m and section:
            rows += [(section, key) for key in m.group(1).split(", ")]
    return rows


class Keys:
    """The demo's pane, and what each key it is sent shows."""

    def __init__(self, pane: Pane) -> None:
        self.pane = pane
        self.done: set[tuple[str, str]] = set()

    def key(self, section: str, shown: str, *then: str) -> None:
        """Type the key the help shows as ``shown`` (then ``then``, tmux names) and mark it typed."""
        self.pane.keys(TMUX_NAMES.get(shown, shown), *then)
        self.done.add((section, shown))

    def log_rows(self) -> list[str]:
        """The log pane's rows on screen (its text, the gutter included)."""
        lines = self.pane.text().splitlines()
        top = next(i for i, line in enumerate(lines) if "─ Log" in line)
        out = []
        for line in lines[top + 1:]:
            if not line.startswith("│"):
                break
            out.append(line[1:69])  # the text, not the scrollbar
        return out[:-1]  # the last row is the pane's status line

    def top(self) -> str:
        return self.log_rows()[0]

    def wait_top(self, want: Callable[[str], bool], what: str) -> None:
        deadline = time.monotonic() + 15
        while not want(self.top()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: the log's top row is {self.top()!r}\n{self.pane.text()}")
            time.sleep(0.1)


@pytest.fixture
def tall(tmp_path: Path) -> Iterator[tuple[Pane, str]]:
    """`symmtui demo` (the crash story) in a 120x72 pane: the help fits whole."""
    name = f"symmtui-keys-{uuid.uuid4().hex[:8]}"
    marker = f"SYMMTUI_TMUX_TEST={name}"
    env = (f"env -u COLUMNS -u LINES {marker} TMPDIR={tmp_path} TERM=tmux-256color "
           f"XDG_STATE_HOME={tmp_path / 'state'} XDG_CONFIG_HOME={tmp_path / 'config'}")
    _tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "72",
          f"{env} {sys.executable} -m symmtui demo --speed 40 --no-record")
    try:
        yield Pane(name), marker
    finally:
        _tmux("kill-session", "-t", name)
        deadline = time.monotonic() + 15
        while _demo_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.mark.timeout(400)
def test_every_key_the_help_lists_typed_in_tmux(tall: tuple[Pane, str]) -> None:  # noqa: PLR0915 (one walk)
    pane, marker = tall
    pane.wait(r"CRASHED", 90)
    pane.wait(r"×8 ranks \(7 copies folded: z\)", 30)
    k = Keys(pane)
    dash, log, box, gpu, dialogs = "dashboard", "the log pane", "the search box", "the GPU table (Tab)", "dialogs"
    # the help, read off the screen
    k.key(dash, "F1")
    screen = pane.wait(r"Every action is also in the command palette", 15)  # all of it fits
    listed = help_keys(screen)
    assert (dash, "q") in listed and (log, ":") in listed and (log, "]") in listed and (log, "X") in listed
    assert (log, "end") in listed and (dash, "^c") in listed and (log, "j") in listed
    k.key(dash, "h")
    pane.gone(r"Keys \(F1 or h\)")
    pane.keys("h")
    pane.wait(r"Keys \(F1 or h\)", 10)
    pane.keys("Escape")
    pane.gone(r"Keys \(F1 or h\)")
    _tmux("resize-window", "-t", pane.session, "-x", "120", "-y", "40")  # the README's size: the log scrolls
    deadline = time.monotonic() + 15
    while len(pane.text().splitlines()) > 40 and time.monotonic() < deadline:
        time.sleep(0.1)
    pane.wait(r"─ Log", 10)

    # ---- the log pane: following, search both ways, n / N, the box's keys
    k.key(log, "f")
    pane.wait(r"❚❚ paused", 10)
    k.key(log, "f")
    pane.wait(r"● following", 10)
    k.key(log, "/")
    pane.wait(r"search the log \(a regex", 10)
    pane.type("init torch")
    pane.wait(r"/init torch/ (\d of 8|8 matches)", 15)
    k.key(box, "↓")
    pane.wait(r"/init torch/ \d of 8", 15)
    first = int(re.search(r"/init torch/ (\d) of 8", pane.text()).group(1))  # type: ignore[union-attr]
    k.key(box, "↑")
    pane.wait(rf"/init torch/ {(first - 2) % 8 + 1} of 8", 15)
    k.key(box, "enter")
    pane.wait(rf"/init torch/ {(first - 1) % 8 + 1} of 8", 15)
    k.key(log, "n")
    pane.wait(rf"/init torch/ {first % 8 + 1} of 8", 15)
    k.key(log, "N")
    pane.wait(rf"/init torch/ {(first - 1) % 8 + 1} of 8", 15)
    k.key(log, "esc")
    pane.gone(r"init torch/")
    k.key(log, "?")
    pane.wait(r"search the log backwards", 10)
    pane.type("Scheduler hit")
    pane.wait(r"/Scheduler hit/ ", 15)
    k.key(box, "esc")  # closes the box, and the search with it
    pane.gone(r"/Scheduler hit/|│Scheduler hit")  # the status line and the box row
    # ---- errors, filters, wrap, folds, the command line
    k.key(log, "e")
    pane.wait(r"errors only \(e\)", 15)
    k.key(log, "e")
    pane.gone(r"errors only \(e\)")
    k.key(log, "]")
    pane.wait(r"mark 1/2", 15)
    k.key(log, "[")
    pane.wait(r"mark 2/2", 15)
    k.key(log, "i")
    pane.wait(r"filter in: show only the records", 10)
    pane.type("TP3")
    pane.keys("Enter")
    pane.wait(r" in /TP3/ +[\d,]+ hidden", 15)
    k.key(log, "X")
    pane.wait(r"filters cleared", 15)
    k.key(log, "x")
    pane.wait(r"filter out: hide the records", 10)
    pane.type("TP3")
    pane.keys("Enter")
    pane.wait(r" out /TP3/ +[\d,]+ hidden", 15)
    pane.keys("X")
    k.key(log, "w")
    pane.wait(r"wrap \(w\)", 15)
    pane.keys("w")
    k.key(log, "z")
    pane.wait(r"copies unfolded", 15)
    pane.keys("z")
    pane.wait(r"copies folded", 15)
    k.key(log, ":")
    pane.wait(r"goto WHERE · filter-in RE", 10)
    pane.type("goto init distributed")
    pane.keys("Enter")
    pane.wait(r"init distributed at line \d+", 15)
    # ---- scrolling: less's, vim's, lnav's keys (the copies unfolded: a log longer than the pane)
    pane.keys("z")
    pane.wait(r"copies unfolded", 15)
    k.key(log, "g")
    k.wait_top(lambda row: "server_args=ServerArgs(" in row, "g: the first line")
    rows = k.log_rows()
    k.key(log, "j")
    k.wait_top(lambda row: row == rows[1], "j: a line down")
    k.key(log, "↓")
    k.wait_top(lambda row: row == rows[2], "down: a line down")
    k.key(log, "k")
    k.wait_top(lambda row: row == rows[1], "k: a line up")
    k.key(log, "↑")
    k.wait_top(lambda row: row == rows[0], "up: a line up")
    k.key(log, "space")
    k.wait_top(lambda row: row != rows[0], "space: a screen down")
    k.key(log, "b")
    k.wait_top(lambda row: row == rows[0], "b: a screen up")
    k.key(log, "pgdn")
    k.wait_top(lambda row: row != rows[0], "pgdn")
    k.key(log, "pgup")
    k.wait_top(lambda row: row == rows[0], "pgup")
    k.key(log, "^d")
    k.wait_top(lambda row: row == rows[len(rows) // 2] or row != rows[0], "ctrl+d: half a screen down")
    k.key(log, "^u")
    k.wait_top(lambda row: row == rows[0], "ctrl+u: half a screen up")
    k.key(log, "→")
    k.wait_top(lambda row: row != rows[0], "right: the text moves left")
    k.key(log, "←")
    k.wait_top(lambda row: row == rows[0], "left: back")
    k.key(log, "G")
    pane.wait(r"● following", 10)
    pane.keys("g")
    pane.wait(r"❚❚ paused", 10)
    k.key(log, "end")
    pane.wait(r"● following", 10)
    k.key(log, "home")
    k.wait_top(lambda row: row == rows[0], "home: the first line")
    pane.keys("3")
    k.done.add((log, "N g"))
    pane.keys("g")
    pane.wait(r"· line 3\b", 10)
    pane.keys("5")
    k.done.add((log, "N G"))
    pane.keys("G")
    pane.wait(r"· line 5\b", 10)
    pane.keys("z")
    pane.wait(r"copies folded", 15)
    # ---- the dashboard's keys: focus, the GPU table, the panels and dialogs
    k.key(dash, "tab")
    pane.wait(r"GPU 0: no processes", 10)
    k.key(gpu, "j")
    pane.wait(r"GPU 1: no processes", 10)
    k.key(gpu, "k")
    pane.wait(r"GPU 0: no processes", 10)
    k.key(gpu, "↓")
    pane.wait(r"GPU 1: no processes", 10)
    k.key(gpu, "↑")
    pane.wait(r"GPU 0: no processes", 10)
    k.key(dash, "esc")  # back to the log pane
    pane.gone(r"GPU 0: no processes")
    pane.keys("Tab")
    pane.wait(r"GPU 0: no processes", 10)
    k.key(dash, "shift+tab")
    pane.gone(r"GPU 0: no processes")
    k.key(dash, "s")
    pane.wait(r"Stacks \(s\)", 30)
    pane.wait(r"taken at [\d:]+ on s", 30)
    k.key(dash, "P")
    pane.wait(r"GPU mem ▼", 15)
    pane.keys("Escape")
    pane.gone(r"GPU mem ▼")
    k.key(dash, "v")
    pane.wait(r"GPU memory and utilisation, the last 10 minutes", 15)
    pane.keys("Escape")
    pane.gone(r"the last 10 minutes")
    k.key(dash, "t")
    pane.wait(r"theme: symmtui-", 10)
    k.key(dash, "r")
    pane.wait(r"Relaunch\?", 15)
    k.done.add((dialogs, "n"))
    pane.answer("n")
    pane.gone(r"Relaunch\?")
    # the README's keys: p, y (the patch), r, y (the relaunch), to READY
    k.key(dash, "p")
    pane.wait(r"Apply \(y\)", 15)
    k.done.add((dialogs, "y"))
    pane.answer("y")
    pane.wait(r"\[patched\]", 30)
    pane.keys("r")
    pane.wait(r"Relaunch\?", 15)
    pane.answer("y")
    pane.wait(r"✔ READY", 120)
    # every key the help listed was typed (q: in the finished-log test below; it quits)
    k.done.add((dash, "q"))
    k.key(dash, "^c")
    assert set(listed) <= k.done, f"keys the help lists but this test never typed: {set(listed) - k.done}"
    deadline = time.monotonic() + 30
    while _demo_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _demo_pids(marker), "ctrl+c quits, and the demo stops its servers"


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
    pane.wait(r"r Relaunch", 10)  # the dashboard's own footer: the view is closed (a redraw can hide a row a moment)
    time.sleep(1.0)  # past the Escape's wait: a key right behind an Escape reads as Alt+key (v never opened the plots)
    pane.keys("v")
    pane.wait(r"GPU memory and utilisation, the last 10 minutes", 15)
    pane.wait(r"1 launching", 10)  # the phases, on the time axis's legend
    pane.wait(r"now", 5)
    pane.keys("Escape")
    pane.gone(r"the last 10 minutes")
    _quit_and_check_nothing_is_left(pane, tmpdir, marker)


@pytest.fixture
def attached(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Pane, Path]]:
    """`symmtui --log LOG` in a tmux pane (the NVML stand-in), LOG a copy of a fixture's first lines."""
    fixture, upto, size = request.param
    log = tmp_path / "server.log"
    lines = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:upto]), encoding="utf-8")
    name = f"symmtui-keys-{uuid.uuid4().hex[:8]}"
    env = (f"env -u COLUMNS -u LINES SYMMTUI_NVML_STANDIN=rtx-pro-6000-x8-pcie TERM=tmux-256color "
           f"XDG_STATE_HOME={tmp_path / 'state'} XDG_CONFIG_HOME={tmp_path / 'config'}")
    _tmux("new-session", "-d", "-s", name, "-x", str(size[0]), "-y", str(size[1]),
          f"{env} {sys.executable} -m symmtui --log {log} --no-record")
    try:
        yield Pane(name), log
    finally:
        _tmux("kill-session", "-t", name)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("attached", [("sglang-tp8-ready.log", None, (80, 24))], indirect=True)
def test_a_finished_log_on_its_own_clock_and_e_without_errors_at_80_columns(attached: tuple[Pane, Path]) -> None:
    pane, _log = attached
    screen = pane.wait(r"READY", 30)
    screen = pane.wait(r"READY  8m01s after its first line", 10)
    assert "00:00" not in screen.splitlines()[0]
    screen = pane.wait(r"q Quit", 10)  # the footer composes once the bindings are ready, a moment after
    footer = screen.rstrip("\n").splitlines()[-1]
    assert "F1 Keys" in footer and "q Quit" in footer  # the important keys, and where the rest are
    pane.keys("e")
    pane.wait(r"no errors in 166 lines \(e shows everything\)", 15)
    pane.keys("e", ":")
    pane.wait(r"goto WHERE", 10)
    pane.type("goto 1")
    pane.keys("Enter")
    pane.wait(r"▸ \[2026-11-29 09:40:03\]", 10)  # line 1 of the file
    pane.keys("q")
    deadline = time.monotonic() + 15
    while pane.text().strip() and "READY" in pane.text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "READY" not in pane.text(), "q quits"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("attached", [("sglang-tp8-ready.log", 110, (80, 24))], indirect=True)
def test_an_attach_to_a_running_launch_counts_from_its_first_line(attached: tuple[Pane, Path]) -> None:
    """The log's first line is stamped 09:40:03, its latest 09:47:23: 7m20s into the bring-up, not 00:00."""
    pane, _log = attached
    screen = pane.wait(r"elapsed 0?7:2\d", 30)
    assert "STARTING" in screen


@pytest.mark.timeout(120)
@pytest.mark.parametrize("attached", [("sglang-tp8-symm-mem-keyerror.log", None, (120, 40))], indirect=True)
def test_the_status_line_keeps_its_hints_whole_at_120x40(attached: tuple[Pane, Path]) -> None:
    """Paused, filtered, wrapped, searching: a pane of 70 columns cannot show every part; it drops whole ones."""
    pane, _log = attached
    pane.wait(r"CRASHED", 30)
    pane.keys("w", "g", "i")
    pane.wait(r"filter in: show only", 10)
    pane.type("TP")
    pane.keys("Enter")
    pane.wait(r" in /TP/ ", 15)
    pane.keys("/")
    pane.wait(r"search the log", 10)
    pane.type("Scheduler hit an exception")
    pane.keys("Enter")
    screen = pane.wait(r"/Scheduler hit an exception/ \d+ of \d+ ", 15)  # counted
    status = next(line for line in screen.splitlines() if "❚❚ paused" in line)
    inner = status.split("│")[1]
    assert "…" not in inner, inner  # nothing cut
    for hint in ("(f: follow)", "(X clears)"):
        head = hint[: len(hint) // 2]
        assert hint in inner or head not in inner, f"{hint!r} cut in two: {inner!r}"
