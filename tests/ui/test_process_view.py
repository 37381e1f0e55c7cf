"""The process view on real child processes listed by the pynvml stand-in: columns, sorting, ours marked,
SIGTERM/SIGKILL after a confirmation that names the process (through a real Session's ``SignalProcess`` intent,
whose tree is the watched pid's), one outside the server's tree only once its pid is typed, another user's
process refused. (The identity changing between listing and confirming: tests/faults/test_process_view_identity.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.session.protocol import SessionLike
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.screens.processes import PidScreen, ProcessScreen
from tests.ui.kit import answer, dialog_title, settle, text, toasts, wait_for, watched

GIB = 1024**3


@pytest.fixture
def children() -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Two real processes of this user, and (as root) one of uid nobody."""
    def sleep(mark: str) -> list[str]:  # the mark right after the interpreter: shown whatever the clone's path
        return [sys.executable, "-X", mark, "-c", "import time; time.sleep(120)"]

    procs = {"server": subprocess.Popen(sleep("--served-by-symmtui-test")),
             "orphan": subprocess.Popen(sleep("--orphan"))}
    if os.geteuid() == 0 and shutil.which("setpriv"):
        procs["stranger"] = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                              "sleep", "120"], cwd="/")
    try:
        yield procs
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(10)


def round_with(procs: dict[str, subprocess.Popen[bytes]]) -> GpuSnapshot:
    """One sampling round of the 8x RTX PRO 6000 stand-in, the children holding GPU memory."""
    module = load_standin("rtx-pro-6000-x8-pcie")
    host = standin_host(module)
    host.add_process(0, procs["server"].pid, 40 * GIB)
    host.add_process(1, procs["server"].pid, 40 * GIB)
    host.add_process(3, procs["orphan"].pid, 2 * GIB)
    stranger = procs["stranger"].pid if "stranger" in procs else 1  # not root: pid 1 is another user's
    host.add_process(5, stranger, 1 * GIB)
    host.set_utilization(87.0, 0)
    host.set_utilization(12.0, 3)
    nvml = Nvml(module)
    try:
        return GpuSampler(nvml).sample_once()
    finally:
        nvml.shutdown()


class ProcApp(App[None]):
    def __init__(self, snapshot: GpuSnapshot, ours: frozenset[int], session: SessionLike) -> None:
        super().__init__()
        self.snapshot, self.ours, self.session = snapshot, ours, session

    def compose(self) -> ComposeResult:
        yield Static("dashboard")

    def on_mount(self) -> None:
        self.push_screen(ProcessScreen(self.snapshot, self.ours, self.session))


def table_text(app: App[object]) -> list[str]:
    return [line.rstrip() for line in text(app).splitlines()]


async def test_the_process_view_lists_sorts_marks_and_signals_only_your_own(
        children: dict[str, subprocess.Popen[bytes]]) -> None:
    if os.geteuid() != 0 and os.stat("/proc/1").st_uid == os.geteuid():
        pytest.skip("no process of another user to refuse (not root, and pid 1 is ours)")
    server, orphan = children["server"], children["orphan"]
    stranger = children["stranger"].pid if "stranger" in children else 1
    session = watched(pid=server.pid)  # the server's tree: the watched pid's
    app = ProcApp(round_with(children), frozenset({server.pid}), session)
    async with app.run_test(size=(160, 40)) as pilot:
        said = toasts(app)  # every notification from now on (App.notify)
        screen = app.screen
        assert isinstance(screen, ProcessScreen)
        await wait_for(pilot, lambda: bool(screen.host) and all(r.host for r in screen.shown), "/proc read")
        await settle(pilot)
        # sorted by GPU memory, the biggest first; the launch's process marked; its two GPUs summed
        assert [r.pid for r in screen.shown] == [server.pid, orphan.pid, stranger]
        lines = table_text(app)
        row = next(line for line in lines if f" {server.pid} " in line)
        assert "● ours" in row and "0,1" in row and "80.0 GiB" in row and "87 %" in row
        assert "--served-by-symmtui-test" in row
        assert "stranger" in next(line for line in lines if f" {stranger} " in line)
        header = next(line for line in lines if "GPU mem" in line)
        assert "GPU mem ▼" in header
        # aligned: every row's GPU memory ends in the same column
        ends = {line.index("GiB") for line in lines if " GiB " in line and ("ours" in line or "stranger" in line
                                                                           or f" {orphan.pid} " in line)}
        assert len(ends) == 1, lines
        await pilot.press("s")  # the next column: GPU util
        assert [r.pid for r in screen.shown] == [server.pid, orphan.pid, stranger]
        assert "GPU util ▼" in next(line for line in table_text(app) if "GPU util" in line)
        await pilot.press("S")
        assert [r.pid for r in screen.shown][0] == stranger

        table = screen.query_one(DataTable)
        # another user's process: refused, with the reason, nothing sent
        table.move_cursor(row=[r.pid for r in screen.shown].index(stranger))
        await pilot.press("k")
        await wait_for(pilot, lambda: "not to you" in "\n".join(said), "the refusal")
        assert f"pid {stranger} belongs to" in "\n".join(said)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "stranger" not in children or children["stranger"].poll() is None
        # our own: a confirmation that names it; n keeps it running
        table.move_cursor(row=[r.pid for r in screen.shown].index(server.pid))
        await pilot.press("k")
        await wait_for(pilot, lambda: dialog_title(app) is not None, "the confirmation")
        assert dialog_title(app) == f"Send SIGTERM to pid {server.pid}?"
        shown = text(app)
        assert "--served-by-symmtui-test" in shown
        assert "one of this launch's processes" in shown
        await pilot.press("n")
        assert server.poll() is None
        # y sends it to ours; the orphan (not the server's) only once its pid is typed
        await pilot.press("k")
        await answer(pilot)  # a yes counts once the question has been up KEY_GUARD
        await wait_for(pilot, lambda: f"SIGTERM sent to pid {server.pid}" in "\n".join(said), "the result")
        assert server.wait(10) == -15
        table.move_cursor(row=[r.pid for r in screen.shown].index(orphan.pid))
        await pilot.press("K")
        assert isinstance(app.screen, PidScreen)
        assert app.screen.query_one("#pid-dialog").border_title == f"Send SIGKILL to pid {orphan.pid}? (not the server's)"
        await pilot.press(*str(orphan.pid + 1), "enter")  # not its pid: nothing sent
        await wait_for(pilot, lambda: f"pid {orphan.pid} not confirmed" in "\n".join(said), "the refusal")
        assert orphan.poll() is None
        await pilot.press("K")
        await pilot.press(*str(orphan.pid), "enter")
        deadline = time.monotonic() + 10
        while orphan.poll() is None and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert orphan.returncode == -9
        await wait_for(pilot, lambda: f"SIGKILL sent to pid {orphan.pid}" in "\n".join(said), "the result")
    session.close()
