"""The Session headless: one line buffer with one cap and drop policy, messages that carry their data."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from symmtui.core import engine as engine_mod
from symmtui.core.readiness import State
from symmtui.session import AttachSpec, EngineBatch, SessionMessage, for_attach
from symmtui.session.settings import bringup_settings
from tests.ui.kit import READY_LOG


def _wait(cond: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_front_end_that_is_slow_costs_only_the_engines_one_capped_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the front end has not acknowledged a batch, one batch waits in flight and the engine keeps
    collecting in its one buffer: past the cap the oldest lines are dropped and counted, and the newest
    still arrive."""
    monkeypatch.setattr(engine_mod, "MAX_PENDING_LINES", 500)
    log = tmp_path / "server.log"
    log.write_text("")
    got: list[EngineBatch] = []
    lock = threading.Lock()

    def post(message: SessionMessage) -> None:
        if isinstance(message, EngineBatch):
            with lock:
                got.append(message)

    session = for_attach(AttachSpec(log=log))
    session.attach(post, acks=True)
    engine = session.follow(log)
    try:
        _wait(lambda: len(got) == 1, "the first batch")
        total = 3000
        with log.open("a") as fh:  # written in pieces: the follower reads several batches meanwhile
            for start in range(0, total, 100):
                fh.write("".join(f"line {i}\n" for i in range(start, start + 100)))
                fh.flush()
        _wait(lambda: engine.snapshot().last_lines[-1:] == ("line 2999",), "the follower to read every line")
        time.sleep(0.2)
        assert len(got) == 1, "a batch was posted before the front end was done with the last one"
        while True:  # the front end catches up: one batch at a time
            with lock:
                last = got[-1]
                seen = len(got)
            if last.lines and last.lines[-1].plain == f"line {total - 1}":
                break
            session.batch_done()
            _wait(lambda seen=seen: len(got) > seen, "the next batch")
        lines = [ln.plain for b in got for ln in b.lines]
        dropped = sum(b.dropped for b in got)
        assert dropped > 0 and len(lines) + dropped == total
        # The batch the engine had taken when the front end stopped acknowledging (got[1]) waited in
        # flight with the lines pending at that moment (how many depends on when the dispatcher woke);
        # everything after it is what the engine's one buffer kept meanwhile, cut to the cap.
        assert sum(len(b.lines) for b in got[2:]) <= engine_mod.MAX_PENDING_LINES
        assert lines[-engine_mod.MAX_PENDING_LINES:] == [f"line {i}" for i in range(total - 500, total)]
    finally:
        session.close()


def test_the_cli_front_end_gets_every_batch_without_acknowledging(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(READY_LOG.read_bytes())
    got: list[EngineBatch] = []
    session = for_attach(AttachSpec(log=log))
    session.attach(lambda m: got.append(m) if isinstance(m, EngineBatch) else None)
    session.follow(log)
    try:
        _wait(lambda: bool(got) and got[-1].snapshot.state is State.READY, "READY")
        assert got[-1].log_path == str(log) and not any(b.restarted for b in got)
        n = sum(1 for _ in READY_LOG.open("rb"))
        assert sum(len(b.lines) for b in got) == n and sum(b.dropped for b in got) == 0
    finally:
        session.close()


def test_settings_one_place_for_defaults_profile_and_command_line(tmp_path: Path) -> None:
    from symmtui.core.readiness import DEFAULT_STALL, DEFAULT_TIMEOUT
    from symmtui.launch.profile import load_profile

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
    """Observers (notify, bundle, metrics) get every message before the front end, and one
    VerdictReached per state change: a log that reaches READY yields exactly one."""
    from symmtui.session import VerdictReached

    log = tmp_path / "server.log"
    log.write_bytes(READY_LOG.read_bytes())
    seen: list[SessionMessage] = []
    front: list[SessionMessage] = []
    session = for_attach(AttachSpec(log=log))
    session.observe(seen.append)
    session.attach(front.append)
    session.follow(log)
    try:
        _wait(lambda: any(isinstance(m, VerdictReached) for m in seen), "a verdict")
        time.sleep(0.3)  # later batches (none should repeat the verdict)
    finally:
        session.close()
    verdicts = [m for m in seen if isinstance(m, VerdictReached)]
    assert [v.snapshot.state for v in verdicts] == [State.READY]
    assert verdicts[0].log_path == str(log) and verdicts[0].launch_id is None
    assert [type(m) for m in front] == [type(m) for m in seen]
