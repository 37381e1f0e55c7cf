"""The process view (P): every process on the GPUs, nvitop's way: GPU memory and utilisation, host CPU and
memory, owner, command, aligned and sortable; our launch's marked; k / K send SIGTERM / SIGKILL to the
selected one after a confirmation that names it (only your own processes: another user's is refused, why said;
one outside the server's tree only once its pid is typed; pid 1 and symmtui itself never).

The app gives it each sampling round (``show``); /proc is read on a worker thread. The signal is the Session's
intent (``session.intents.SignalProcess``): the identity shown (pid, start time, owner) is checked at that moment, in
``proc.identity``, and the toast says what happened ("already exited", "changed owner: not signalled").
"""

from __future__ import annotations

import signal
from collections.abc import Collection
from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from symmtui.gpu.sampler import GpuSnapshot
from symmtui.session.intents import SignalProcess
from symmtui.session.protocol import SessionLike
from symmtui.textsafe import visible
from symmtui.ui import procview
from symmtui.ui.procview import COLUMNS, HostFacts, ProcRow
from symmtui.ui.screens.confirm import ConfirmScreen
from symmtui.ui.widgets.fmt import gib

__all__ = ["ProcessScreen"]

HINT = ("k SIGTERM · K SIGKILL (your own processes, after a yes; another than the server's once its pid is typed) "
        "· s sort by the next column · S reverse · Esc close")



@dataclass
class HostRead(Message):
    """What /proc said of the pids (from the worker thread)."""

    facts: dict[int, HostFacts]


@dataclass
class Sent(Message):
    """A signal was sent, or why not."""

    text: str
    ok: bool


def _num(value: float | None, fmt: str) -> Text:
    return Text("n/a" if value is None else fmt.format(value), justify="right")


class PidScreen(ModalScreen[str | None]):
    """Ask for a pid to be typed before a process outside the server's tree is signalled; dismiss with the text
    typed (Enter) or None (Escape)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", priority=True)]

    def __init__(self, title: str, body: str | Content) -> None:
        super().__init__(classes="dialog-screen")
        self._title = title
        self._body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="pid-dialog") as box:
            box.border_title = self._title
            yield Static(self._body, id="pid-body")
            yield Input(placeholder="the pid, then Enter (Escape: cancel)", id="pid-input", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class ProcessScreen(ModalScreen[None]):
    """The process table over the dashboard."""

    BINDINGS = [
        Binding("escape,q,P", "close", "Close"),
        Binding("s", "sort(1)", "Sort"),
        Binding("S", "reverse", "Reverse", key_display="S"),
        Binding("k", "signal('SIGTERM')", "SIGTERM"),
        Binding("K", "signal('SIGKILL')", "SIGKILL", key_display="K"),
    ]

    def __init__(self, snapshot: GpuSnapshot | None, our_pids: Collection[int] = (),
                 session: SessionLike | None = None) -> None:
        super().__init__(classes="dialog-screen")
        self._session = session  # k / K ask it SignalProcess (session.intents)
        self.snapshot = snapshot
        self.our_pids = frozenset(our_pids)
        self.host: dict[int, HostFacts] = {}
        self.sort_by = "gpu_memory"
        self.reverse = False
        self.shown: list[ProcRow] = []
        self._cache: dict[int, object] = {}

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="procs-dialog") as box:
            box.border_title = "Processes on the GPUs (P)"
            yield Static(Content.styled(HINT, "$muted"), id="procs-hint")
            yield DataTable(id="procs-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="procs-note")

    def on_mount(self) -> None:
        self._fill()
        self._read_host()

    # ---- data -----------------------------------------------------------------------------------
    def show(self, snapshot: GpuSnapshot, our_pids: Collection[int]) -> None:
        """A new sampling round: the table follows it (the host's side is read again)."""
        self.snapshot = snapshot
        self.our_pids = frozenset(our_pids)
        self._fill()
        self._read_host()

    @work(thread=True, exclusive=True, group="procs-host")
    def _read_host(self) -> None:
        pids = [r.pid for r in procview.rows(self.snapshot, ())] if self.snapshot is not None else []
        self.post_message(HostRead(procview.host_facts(pids, self._cache)))

    def on_host_read(self, message: HostRead) -> None:
        self.host = message.facts
        self._fill()

    def rows(self) -> list[ProcRow]:
        """The rows as shown, sorted."""
        if self.snapshot is None:
            return []
        return procview.sort_rows(procview.rows(self.snapshot, self.our_pids, self.host), self.sort_by, self.reverse)

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        selected = self.shown[table.cursor_row].pid if self.shown and 0 <= table.cursor_row < len(self.shown) else None
        self.shown = self.rows()
        table.clear(columns=True)
        arrow = "▲" if (self.sort_by in ("pid", "user", "gpus", "command")) != self.reverse else "▼"
        table.add_column("", key="mark")
        for key, header in COLUMNS:
            table.add_column(f"{header} {arrow}" if key == self.sort_by else header, key=key)
        for row in self.shown:
            host = row.host
            mark = Text("● ours", style="bold") if row.ours else Text("")
            if row.mine is False:
                mark = Text("stranger", style="bold")
            table.add_row(
                mark, Text(str(row.pid), justify="right"), visible(host.user or "?") if host else "…",
                ",".join(map(str, row.gpus)),
                Text("n/a" if row.gpu_memory is None else f"{gib(row.gpu_memory)} GiB", justify="right"),
                _num(row.gpu_util, "{:.0f} %"),
                _num(host.cpu if host else None, "{:.1f} %"),
                Text("n/a" if host is None or host.rss is None else f"{gib(host.rss)} GiB", justify="right"),
                visible(row.command)[:200], key=str(row.pid))
        if selected is not None:
            index = next((i for i, r in enumerate(self.shown) if r.pid == selected), None)
            if index is not None:
                table.move_cursor(row=index)
        note = self.query_one("#procs-note", Static)
        if self.snapshot is None:
            note.update(Content.styled("no GPU sample yet", "$muted"))
        elif not self.shown:
            note.update(Content.styled("no process holds GPU memory", "$muted"))
        else:
            ours = sum(1 for r in self.shown if r.ours)
            note.update(Content.styled(
                f"{len(self.shown)} process(es), {ours} of this launch; GPU util is that of the process's GPUs "
                "(NVML's per-process utilisation is not sampled)", "$muted"))

    # ---- keys -----------------------------------------------------------------------------------
    def action_close(self) -> None:
        self.dismiss(None)

    def action_sort(self, step: int) -> None:
        """Sort by the next column (the biggest first for sizes and rates)."""
        keys = [k for k, _ in COLUMNS]
        self.sort_by = keys[(keys.index(self.sort_by) + step) % len(keys)]
        self.reverse = False
        self._fill()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self._fill()

    def selected(self) -> ProcRow | None:
        """The row under the cursor."""
        table = self.query_one(DataTable)
        return self.shown[table.cursor_row] if self.shown and 0 <= table.cursor_row < len(self.shown) else None

    def action_signal(self, name: str) -> None:
        """Confirm, then send SIGTERM / SIGKILL to the selected process; another user's is refused."""
        row = self.selected()
        if row is None:
            self.notify("no process selected", severity="warning")
            return
        why = procview.refusal(row)
        if why is not None:
            self.notify(why, severity="warning", timeout=8)
            return
        if self._session is None:
            self.notify("no session to signal through: nothing sent", severity="warning")
            return
        sig = signal.Signals[name]
        where = f"GPU {','.join(map(str, row.gpus))}"
        if row.gpu_memory is not None:
            where += f", {gib(row.gpu_memory)} GiB"
        if not row.ours:
            body = Content(f"pid {row.pid}  {visible(row.command)[:300]}\n({where}; yours)\n\nIt is not one of the "
                           f"server's processes. Type its pid to send {name}; anything else sends nothing.")
            self.app.push_screen(PidScreen(f"Send {name} to pid {row.pid}? (not the server's)", body),
                                 partial(self._typed, row, sig))
            return
        ours = ("\n\nIt is one of this launch's processes: r relaunches (or symmtui stop ends) the whole tree; "
                "this signals only this one.")
        body = Content(f"pid {row.pid}  {visible(row.command)[:300]}\n({where}; yours){ours}")
        self.app.push_screen(ConfirmScreen(f"Send {name} to pid {row.pid}?", body, yes=f"Send {name}"),
                             partial(self._confirmed, row, sig))

    def _confirmed(self, row: ProcRow, sig: signal.Signals, yes: bool | None) -> None:
        if yes:
            self._send(row, sig, False)

    def _typed(self, row: ProcRow, sig: signal.Signals, typed: str | None) -> None:
        if typed is None:
            return
        if typed != str(row.pid):
            shown = visible(typed)[:20]
            self.notify(f"pid {row.pid} not confirmed (typed {shown!r}): nothing sent", severity="warning", timeout=6)
            return
        self._send(row, sig, True)

    @work(thread=True, group="procs-signal")
    def _send(self, row: ProcRow, sig: signal.Signals, by_pid: bool) -> None:
        assert self._session is not None
        done = self._session.ask(SignalProcess(procview.listed(row), sig, by_pid))
        self.post_message(Sent(done.text, done.sent))

    def on_sent(self, message: Sent) -> None:
        self.notify(message.text, severity="information" if message.ok else "warning", timeout=6)
        self._read_host()
