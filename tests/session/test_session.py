"""The Session headless: a front end that is slow or frozen holds nothing back (one capped mailbox, observers
on threads of their own), and the messages carry their data."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from symmtui.build import Limits, open_session, wait_spec
from symmtui.judge.board import Board
from symmtui.judge.readiness import State
from symmtui.launch.profile import load_profile
from symmtui.session.messages import EngineBatch, SessionMessage, VerdictReached
from symmtui.session.settings import bringup_settings
from symmtui.ui.app import SymmApp, app_css_path
from tests.notify.kit import KEYERROR_LOG, TOKEN, receiver
from tests.ui.kit import READY_LOG, watched


def _wait(cond: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_front_end_that_never_takes_holds_no_log_text_and_observers_get_every_line(tmp_path: Path) -> None:
    """While the front end takes nothing, the engine keeps judging: the front end's mailbox holds one merged
    batch of each node with no log text in it (the dashboard's pane reads the file itself; a flood never
    reaches the UI thread as text), the newest Board with it; an observer (the recorder) gets every line."""
    log = tmp_path / "server.log"
    log.write_text("")
    session = watched(log)
    box = session.attach(lambda: None)
    heard: list[str] = []
    session.observe(lambda m: heard.extend(ln.plain for ln in m.lines) if isinstance(m, EngineBatch) else None,
                    name="test")
    total = 3000
    try:
        with log.open("a") as fh:  # written in pieces: the follower reads several batches meanwhile
            for start in range(0, total, 100):
                fh.write("".join(f"line {i}\n" for i in range(start, start + 100)))
                fh.flush()
        _wait(lambda: len(heard) == total, "an observer to hear every line")
        session.close()  # the dispatcher's last batch is in the mailbox once its thread has ended
        [batch] = [m for m in box.take() if isinstance(m, EngineBatch)]
        assert batch.lines == () and batch.snapshot.last_lines[-1] == f"line {total - 1}"
        assert heard == [f"line {i}" for i in range(total)]
    finally:
        session.close()


def test_settings_one_place_for_defaults_profile_and_command_line(tmp_path: Path) -> None:
    from symmtui.judge.readiness import DEFAULT_STALL, DEFAULT_TIMEOUT

    plain = bringup_settings()
    assert (plain.readiness.timeout, plain.readiness.stall) == (DEFAULT_TIMEOUT, DEFAULT_STALL) == (900.0, 300.0)
    cfg = tmp_path / "p.toml"
    cfg.write_text('[server]\nlog = "x.log"\ntimeout = 60\nstall = 0\n[rules]\nready = ["ALL GOOD"]\n')
    profile = load_profile(cfg)
    from_profile = bringup_settings(profile)
    assert from_profile.readiness.timeout == 60.0 and from_profile.readiness.stall is None  # 0: no limit
    assert from_profile.ruleset.match("ALL GOOD") is not None
    overridden = bringup_settings(profile, timeout=5.0, ready=["EXTRA"])
    assert overridden.readiness.timeout == 5.0
    assert overridden.ruleset.match("ALL GOOD") is not None and overridden.ruleset.match("EXTRA") is not None


def test_an_observer_hears_each_verdict_once_with_the_log_it_judged(tmp_path: Path) -> None:
    """Observers (notify, bundle, metrics) get every message, on a thread of their own, and one
    VerdictReached per change: a log that reaches READY yields exactly one."""
    log = tmp_path / "server.log"
    log.write_bytes(READY_LOG.read_bytes())
    seen: list[SessionMessage] = []
    spec = wait_spec(log=log, log_cmd=None, url=None, pid=None, config=None, limits=Limits(), new_only=False,
                     stacks=False, notify=False, record_bundle=False, metrics_port=None, metrics_host="",
                     metrics_linger=0)
    from symmtui.session.core import Session

    session = Session(spec)
    session.observe(seen.append)
    session.start()
    box = session.attach(lambda: None)
    try:
        _wait(lambda: any(isinstance(m, VerdictReached) for m in seen), "a verdict")
        time.sleep(0.3)  # later batches (none should repeat the verdict)
    finally:
        session.close()
    verdicts = [m for m in seen if isinstance(m, VerdictReached)]
    assert [v.snapshot.state for v in verdicts] == [State.READY]
    assert verdicts[0].log_path == str(log) and verdicts[0].launch_id is None
    assert [type(m) for m in box.take() if isinstance(m, VerdictReached)] == [VerdictReached]


async def test_a_frozen_screen_holds_nothing_back_and_every_board_comes_in_order(tmp_path: Path) -> None:
    """The dashboard's loop is stuck (a handler that does not return, as a terminal that stopped reading would
    leave it) until the webhook heard: the crash written to the log meanwhile reaches a real webhook receiver
    on 127.0.0.1 while the screen is still frozen; an observer gets every Board, in order, none missing; the
    screen, once free, shows the newest Board and never an older one after a newer."""
    head, _sep, rest = KEYERROR_LOG.read_text().partition("Traceback (most recent call last):")
    before, last = head.rsplit("\n", 1)
    log = tmp_path / "server.log"
    log.write_text(before + "\n")  # the lines before the crash
    shown: list[int] = []

    class Recording(SymmApp):
        CSS_PATH = str(app_css_path())

        def show_board(self, board: Board) -> None:
            shown.append(board.seq)
            super().show_board(board)

    with receiver() as hooks:
        cfg = tmp_path / "p.toml"
        cfg.write_text(f'[server]\nlog = "{log}"\n[notify]\nbell = false\ndesktop = false\n'
                       f'webhook = "{hooks.url("/hook/" + TOKEN)}"\nformat = "json"\n')
        spec = wait_spec(log=None, log_cmd=None, url=None, pid=None, config=str(cfg), limits=Limits(),
                         new_only=False, stacks=False, notify=True, record_bundle=False, metrics_port=None,
                         metrics_host="", metrics_linger=0)
        session = open_session(spec)
        seen: list[Board] = []
        session.observe(lambda m: seen.append(m.board) if isinstance(m, EngineBatch) else None, name="test")
        app = Recording(session)
        frozen, heard = threading.Event(), threading.Event()
        states_while_frozen: list[State] = []

        def crash_while_frozen() -> None:
            assert frozen.wait(60)
            with log.open("a") as fh:
                fh.write(last + "Traceback (most recent call last):" + rest)
            hooks.wait_for(1, timeout=60)
            states_while_frozen.append(State.CRASHED if seen and seen[-1].state is State.CRASHED else State.WAITING)
            heard.set()

        def hang() -> None:  # the front end's handler that does not return until the webhook heard
            frozen.set()
            heard.wait(60)

        writer = threading.Thread(target=crash_while_frozen)
        writer.start()
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                app.call_later(hang)
                await pilot.pause()  # the loop is stuck in hang() until it returns
                writer.join(60)
                assert heard.is_set(), "the webhook never heard while the screen was frozen"
                for _ in range(300):  # the freed screen takes the mailbox: the newest Board
                    await pilot.pause(0.05)
                    if app.board is not None and app.board.state is State.CRASHED:
                        break
                assert app.board is not None and app.board.state is State.CRASHED
        finally:
            session.close()
            frozen.set()
            heard.set()
            writer.join(30)
        got = list(hooks.got)
    assert got and got[0].body["state"] == "CRASHED", got
    assert states_while_frozen == [State.CRASHED]
    seqs = [b.seq for b in seen]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "an observer missed a Board or got one out of order"
    assert shown == sorted(shown) and shown[-1] <= seqs[-1]
