"""The demo's tmux pane closed at each point of its start-up leaves nothing: no temp dir, no process. Real tmux,
the real demo; each point is polled for (the temp dir made, the simulated server running, the first screen
drawn), never a fixed delay. Closing the pane 0.3 s after the start left the temp dir in 4 of 7 runs: a SIGHUP
before the dashboard took the signals over ended the demo in its clean-up's first line (its note on a terminal
that is gone: EIO, turned into "cannot write to standard error"), before the servers were stopped and the temp
dir removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ui.test_tmux import Pane, _demo_pids, _tmux

pytestmark = [pytest.mark.tmux, pytest.mark.xdist_group("tmux"), pytest.mark.needs("tmux")]


def _server_up(marker: str) -> bool:
    for pid in _demo_pids(marker):
        try:
            if b"symmtui.demo.server" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def _left(pid: int) -> str:
    """What a process left behind is: its command line and, for a Python one, its threads' stacks (py-spy)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return f"{pid}: (gone)"
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None or "python" not in argv:
        return f"{pid}: {argv}"
    try:
        dump = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return f"{pid}: {argv}\n(py-spy dump took over 10 s)"
    return f"{pid}: {argv}\n{dump.stdout}{dump.stderr}"


POINTS: dict[str, Callable[[Pane, Path, str], bool]] = {
    "its temp dir is made": lambda pane, tmp, marker: any(tmp.glob("symmtui-demo-*")),
    "its server runs": lambda pane, tmp, marker: _server_up(marker),
    "its first screen is drawn": lambda pane, tmp, marker: "GPUs" in pane.text(),
}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("point", list(POINTS))
@pytest.mark.parametrize("run", [1, 2])
def test_closing_the_pane_as_the_demo_starts_leaves_nothing(tmp_path: Path, point: str, run: int) -> None:
    name = f"symmtui-hup-{uuid.uuid4().hex[:8]}"
    marker = f"SYMMTUI_TMUX_TEST={name}"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    command = (f"env -u COLUMNS -u LINES {marker} TMPDIR={tmp} TERM=tmux-256color XDG_STATE_HOME={tmp_path / 'state'} "
               f"{sys.executable} -m symmtui demo --speed 160")
    _tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", command)
    pane = Pane(name)
    try:
        deadline = time.monotonic() + 60
        while not POINTS[point](pane, tmp, marker):
            assert time.monotonic() < deadline, f"the demo never got to: {point}\n{pane.text()}"
            time.sleep(0.005)
        _tmux("kill-session", "-t", name)  # the pane closes: SIGHUP to the demo
        deadline = time.monotonic() + 30
        while (_demo_pids(marker) or any(tmp.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [_left(pid) for pid in _demo_pids(marker)]
        assert not left, "the demo left processes behind:\n" + "\n".join(left)
        assert not any(tmp.iterdir()), f"the demo left files: {sorted(p.name for p in tmp.iterdir())}"
    finally:
        _tmux("kill-session", "-t", name)
        for pid in _demo_pids(marker):  # only after a failure
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
