"""The readiness machine, driven by events and a hand-held clock (no sleeping)."""

from __future__ import annotations

import signal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symmtui.errors import UserError
from symmtui.judge.events import Event, EventBuilder
from symmtui.judge.readiness import READY_WAITING_HEALTH, Readiness, ReadinessConfig, State, describe_exit
from symmtui.judge.rules import PHASE_STARTING, Kind, RuleSet

from .engine_kit import KEYERROR_LOG, READY_LOG, lines_of


def ev(kind: Kind, rule_id: str = "r", *, phase: str | None = None, progress: tuple[int, int] | None = None,
       key: str | None = None, summary: str = "s", ends: str | None = None, ranks: frozenset[int] = frozenset()) -> Event:
    entry = RuleSet().by_id(rule_id)  # the catalogue entry's roles (wrapper, fatal, new_run)
    return Event(kind, rule_id, summary, 1, summary, phase=phase, progress=progress, key=key or rule_id,
                 ends=ends, ranks=ranks, roles=entry.roles if entry is not None else frozenset())


def phase(name: str) -> Event:
    return ev(Kind.PHASE, "p_" + name, phase=name)


def test_waiting_then_starting_on_first_line() -> None:
    r = Readiness(ReadinessConfig(), 100.0)
    assert r.snapshot(100.0).state is State.WAITING
    r.feed_activity(101.0, ["hello"])
    s = r.snapshot(101.5)
    assert s.state is State.STARTING and s.last_lines == ("hello",) and s.since_activity == pytest.approx(0.5)


def test_last_lines_show_a_progress_line_once_at_its_latest() -> None:
    """Carriage-return updates of the unfinished line replace each other at the end of last_lines;
    the finished line takes their place."""
    r = Readiness(ReadinessConfig(last_lines=3), 0.0)
    r.feed_activity(1.0, ["a", "b"])
    for i in range(10):
        r.feed_activity(2.0 + i, (), live=f"bar {i}/10")
    assert r.snapshot(12.0).last_lines == ("a", "b", "bar 9/10")
    r.feed_activity(13.0)  # activity with no line: nothing changes
    assert r.snapshot(13.0).last_lines == ("a", "b", "bar 9/10")
    r.feed_activity(14.0, ["bar 10/10", "c"])
    assert r.snapshot(14.0).last_lines == ("b", "bar 10/10", "c")
    r.feed_activity(15.0, ["d"], live="next bar 1/5")
    assert r.snapshot(15.0).last_lines == ("c", "d", "next bar 1/5")


def test_phases_progress_and_ready() -> None:
    r = Readiness(ReadinessConfig(timeout=900), 0.0)
    r.feed(phase("init distributed"), 1.0)
    r.feed(phase("loading weights"), 5.0)
    r.feed(ev(Kind.PROGRESS, "shards", phase="loading weights", progress=(50, 100)), 6.0)
    s = r.snapshot(7.0)
    assert s.state is State.STARTING and s.phase == "loading weights" and s.progress == 0.5
    assert s.progress_counts == (50, 100) and s.remaining_timeout == pytest.approx(893.0)
    r.feed(ev(Kind.PHASE, "load_end", ends="loading weights", phase="allocating KV cache"), 9.0)
    r.feed(ev(Kind.READY, "sglang_ready", phase="ready"), 12.0)
    s = r.snapshot(20.0)
    assert s.state is State.READY and s.verdict_elapsed == 12.0 and s.progress is None
    names = [p.name for p in s.phases]
    assert names == ["init distributed", "loading weights", "allocating KV cache", "ready"]
    spans = {p.name: p for p in s.phases}
    assert spans["init distributed"].end == 5.0 and spans["loading weights"].end == 9.0
    assert spans["loading weights"].duration() == 4.0


def test_phases_never_go_backwards() -> None:
    r = Readiness(ReadinessConfig(), 0.0)
    r.feed(phase("loading weights"), 1.0)
    r.feed(phase("init distributed"), 2.0)  # a lagging rank
    assert r.snapshot(3.0).phase == "loading weights"
    assert [p.name for p in r.snapshot(3.0).phases] == ["loading weights"]


def test_crash_is_final_and_keeps_first_cause_updated_by_key() -> None:
    r = Readiness(ReadinessConfig(), 0.0)
    r.feed(phase("init distributed"), 1.0)
    tb1 = ev(Kind.CRASH, "traceback", key="tb:k", summary="KeyError: 12 at x.py:1", ranks=frozenset({0}))
    r.feed(tb1, 14.1)
    tb8 = Event(Kind.CRASH, "traceback", "KeyError: 12 at x.py:1", 1, "", key="tb:k", ranks=frozenset(range(8)), count=8)
    r.feed(tb8, 14.2)
    r.feed(ev(Kind.READY, "sglang_ready"), 15.0)
    s = r.snapshot(16.0)
    assert s.state is State.CRASHED and s.verdict_elapsed == 14.1
    assert s.cause is not None and s.cause.count == 8 and s.cause.headline() == "KeyError: 12 at x.py:1 (8 ranks)"
    assert len(s.errors) == 1
    assert s.phases[-1].end == 14.1


def test_secondary_cause_is_replaced_by_the_real_error() -> None:
    r = Readiness(ReadinessConfig(), 0.0)
    r.feed(ev(Kind.CRASH, "sglang-child-failed"), 1.0)
    r.feed(ev(Kind.CRASH, "traceback", key="tb"), 1.1)
    s = r.snapshot(2.0)
    assert s.cause is not None and s.cause.rule_id == "traceback" and len(s.errors) == 2


def test_marker_with_failing_probe_is_not_ready() -> None:
    r = Readiness(ReadinessConfig(need_probe=True), 0.0)
    r.feed_probe(False, "GET /health answered 500", 1.0)
    r.feed(ev(Kind.READY, "sglang_ready"), 2.0)
    s = r.snapshot(3.0)
    assert s.state is State.STARTING and s.phase == READY_WAITING_HEALTH and s.marker_seen
    r.feed_probe(True, "answered 200", 4.0)
    s = r.snapshot(5.0)
    assert s.state is State.READY and s.verdict_elapsed == 4.0


def test_probe_alone_is_enough() -> None:
    r = Readiness(ReadinessConfig(need_probe=True), 0.0)
    r.feed_probe(False, "connection refused", 1.0)
    assert r.snapshot(1.0).state is State.WAITING
    r.feed_probe(True, "answered 200", 2.0)
    s = r.snapshot(2.0)
    assert s.state is State.READY and not s.marker_seen and "200" in s.detail


@pytest.mark.parametrize(
    ("code", "text"),
    [(1, "process exited with code 1"), (0, "process exited with code 0"),
     (-9, "process killed by signal 9 (SIGKILL)"), (None, "process exited (exit code unknown")],
)
def test_process_gone_before_ready_is_a_crash(code: int | None, text: str) -> None:
    r = Readiness(ReadinessConfig(has_pid=True), 0.0)
    r.feed_process(True, None, 0.5)
    r.feed(phase("loading weights"), 1.0)
    r.feed_process(False, code, 3.0)
    s = r.snapshot(3.0)
    assert s.state is State.CRASHED and s.cause is not None
    assert s.cause.rule_id == "process_exit" and s.cause.summary.startswith(text)
    assert "before it was ready" in s.cause.summary


def test_process_exit_after_a_logged_crash_keeps_the_logged_cause() -> None:
    r = Readiness(ReadinessConfig(has_pid=True), 0.0)
    r.feed(ev(Kind.CRASH, "traceback", key="tb"), 1.0)
    r.feed_process(False, 1, 2.0)
    s = r.snapshot(2.0)
    assert s.cause is not None and s.cause.rule_id == "traceback"
    assert s.process_detail == "process exited with code 1"


def test_after_ready_a_traceback_is_recorded_but_a_kill_is_fatal() -> None:
    r = Readiness(ReadinessConfig(), 0.0)
    r.feed(ev(Kind.READY, "sglang_ready"), 1.0)
    r.feed(ev(Kind.CRASH, "traceback", key="tb"), 2.0)
    s = r.snapshot(2.0)
    assert s.state is State.READY and len(s.errors) == 1
    r.feed(ev(Kind.CRASH, "process-killed", key="k"), 3.0)
    assert r.snapshot(3.0).state is State.CRASHED


def test_clean_exit_after_ready_is_stopped() -> None:
    r = Readiness(ReadinessConfig(has_pid=True), 0.0)
    r.feed(ev(Kind.READY, "sglang_ready"), 1.0)
    r.feed_process(False, -signal.SIGTERM, 5.0)
    assert r.snapshot(5.0).state is State.STOPPED


@pytest.mark.parametrize("code", [143, 130])
def test_shell_reported_sigterm_after_ready_is_stopped(code: int) -> None:
    # a server launched through `sh -c`: the shell reports its SIGTERM'd child as 128 + 15
    r = Readiness(ReadinessConfig(has_pid=True), 0.0)
    r.feed(ev(Kind.READY, "sglang_ready"), 1.0)
    r.feed_process(False, code, 5.0)
    assert r.snapshot(5.0).state is State.STOPPED


def test_exit_143_before_ready_is_a_crash() -> None:
    r = Readiness(ReadinessConfig(has_pid=True), 0.0)
    r.feed_process(False, 143, 5.0)
    s = r.snapshot(5.0)
    assert s.state is State.CRASHED and s.cause is not None and "code 143 before it was ready" in s.cause.summary


def test_stall_and_recovery() -> None:
    r = Readiness(ReadinessConfig(stall=300, timeout=900), 0.0)
    r.feed_activity(10.0, ["x"])
    assert r.tick(309.9) is State.STARTING
    assert r.tick(310.0) is State.STALLED
    s = r.snapshot(320.0)
    assert "no new line and no progress" in s.detail and s.since_activity == pytest.approx(310.0)
    r.feed(ev(Kind.PROGRESS, "shards", phase="loading weights", progress=(1, 2)), 321.0)
    assert r.snapshot(321.0).state is State.STARTING


def test_timeout() -> None:
    r = Readiness(ReadinessConfig(timeout=900, stall=300), 0.0)
    r.feed_activity(1.0, ["a", "b"])
    assert r.tick(899.9) is State.STALLED
    s = r.snapshot(900.0)
    assert s.state is State.TIMED_OUT and s.remaining_timeout == 0.0 and s.verdict_elapsed == 900.0
    r.feed(ev(Kind.READY, "sglang_ready"), 901.0)
    assert r.snapshot(901.0).state is State.TIMED_OUT


def test_due_in_names_the_next_moment_the_clock_alone_changes_the_state() -> None:
    r = Readiness(ReadinessConfig(timeout=900, stall=300), 0.0)
    assert r.due_in(100.0) == pytest.approx(800.0)  # waiting: only the timeout is due
    r.feed_activity(10.0, ["x"])
    assert r.due_in(100.0) == pytest.approx(210.0)  # starting: the stall comes first
    assert r.tick(310.0) is State.STALLED and r.due_in(310.0) == pytest.approx(590.0)
    r.feed_process(False, 1, 320.0)  # a final state: nothing more is due
    assert r.state.final and r.due_in(320.0) is None
    assert Readiness(ReadinessConfig(timeout=None, stall=None), 0.0).due_in(5.0) is None


@pytest.mark.parametrize("limit", [None, 0, 0.0])
def test_no_timeout_when_none_or_zero(limit: float | None) -> None:
    cfg = ReadinessConfig(timeout=limit, stall=limit)
    assert cfg.timeout is None and cfg.stall is None
    r = Readiness(cfg, 0.0)
    assert r.tick(1e9) is State.WAITING
    assert r.snapshot(1e9).remaining_timeout is None


def test_restart_and_stop() -> None:
    r = Readiness(ReadinessConfig(), 0.0)
    r.feed(ev(Kind.CRASH, "traceback"), 1.0)
    r.restart(50.0)
    s = r.snapshot(51.0)
    assert s.state is State.WAITING and s.cause is None and s.errors == () and s.elapsed == 1.0
    r.mark_stopped(52.0, "user pressed stop")
    assert r.snapshot(52.0).state is State.STOPPED


@pytest.mark.parametrize("kwargs", [{"timeout": -1}, {"stall": -5}, {"timeout": float("nan")}, {"stall": "5"}])
def test_bad_limits_are_user_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(UserError, match="positive number of seconds"):
        ReadinessConfig(**kwargs)  # type: ignore[arg-type]


def test_describe_exit() -> None:
    assert describe_exit(3) == "process exited with code 3"
    assert describe_exit(-15) == "process killed by signal 15 (SIGTERM)"


@pytest.mark.parametrize(("path", "state"), [(KEYERROR_LOG, State.CRASHED), (READY_LOG, State.READY)])
def test_samples_through_builder_and_machine(path: object, state: State) -> None:
    b = EventBuilder()
    r = Readiness(ReadinessConfig(), 0.0)
    for i, line in enumerate(lines_of(path.read_text())):  # type: ignore[attr-defined]
        r.feed_activity(i * 0.01, [line.text])
        for e in b.feed(line):
            r.feed(e, i * 0.01)
    s = r.snapshot(10.0)
    assert s.state is state
    if state is State.CRASHED:
        assert s.cause is not None and s.cause.headline() == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)"
    else:
        assert s.log_span == pytest.approx(481.0)
        assert [p.name for p in s.phases][-2:] == ["warm-up", "ready"]


def test_sigquit_after_ready_points_at_the_latest_logged_error() -> None:
    r = Readiness(ReadinessConfig(), 0.0)
    r.feed(ev(Kind.READY, "sglang_ready"), 1.0)
    r.feed(ev(Kind.CRASH, "traceback", key="tb", summary="RuntimeError: CUDA error: illegal memory access"), 2.0)
    r.feed(ev(Kind.CRASH, "sglang-child-failed", key="sq"), 3.0)
    s = r.snapshot(3.0)
    assert s.state is State.CRASHED and s.cause is not None and s.cause.rule_id == "traceback"


def test_a_new_launch_in_the_same_log_starts_over() -> None:
    r = Readiness(ReadinessConfig(), 0.0)
    r.feed(ev(Kind.PHASE, "server-args", phase=PHASE_STARTING), 0.5)
    r.feed(ev(Kind.PHASE, "server-args", phase=PHASE_STARTING), 0.6)  # still the first launch
    assert r.snapshot(0.6).run == 1
    r.feed(ev(Kind.READY, "sglang_ready"), 1.0)
    assert r.snapshot(1.0).state is State.READY
    r.feed(ev(Kind.PHASE, "server-args", phase=PHASE_STARTING), 2.0)
    s = r.snapshot(2.0)
    assert s.run == 2 and s.state is State.STARTING and s.phase == PHASE_STARTING and not s.marker_seen
    assert [p.name for p in s.phases] == [PHASE_STARTING]


_ACTIONS = st.one_of(
    st.tuples(st.just("event"), st.sampled_from([
        ev(Kind.PHASE, "p1", phase="init distributed"), ev(Kind.PHASE, "p2", phase="loading weights"),
        ev(Kind.PROGRESS, "pr", phase="loading weights", progress=(3, 7)), ev(Kind.READY, "sglang_ready"),
        ev(Kind.CRASH, "traceback", key="tb"), ev(Kind.CRASH, "sglang-child-failed", key="sq"), ev(Kind.WARNING, "w"),
        ev(Kind.PHASE, "server-args", phase=PHASE_STARTING), ev(Kind.CRASH, "process-killed", key="k"),
    ])),
    st.tuples(st.just("probe"), st.booleans()),
    st.tuples(st.just("process"), st.sampled_from([None, 0, 1, -9, -15])),
    st.tuples(st.just("lines"), st.just(None)),
    st.tuples(st.just("tick"), st.just(None)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ACTIONS, st.floats(min_value=0, max_value=200)), max_size=40), st.booleans())
def test_machine_invariants(steps: list[tuple[tuple[str, object], float]], need_probe: bool) -> None:
    r = Readiness(ReadinessConfig(timeout=900, stall=300, need_probe=need_probe, has_pid=True), 0.0)
    now = 0.0
    ready_evidence = False
    for (action, arg), dt in steps:
        now += dt
        before = r.snapshot(now)
        if action == "event":
            assert isinstance(arg, Event)
            r.feed(arg, now)
            if arg.rule_id == "server-args" and before.state is not State.WAITING:
                ready_evidence = False
            if arg.kind is Kind.READY and not need_probe:
                ready_evidence = True
        elif action == "probe":
            r.feed_probe(bool(arg), "x", now)
            ready_evidence = ready_evidence or bool(arg)
        elif action == "process":
            r.feed_process(arg is None, arg if isinstance(arg, int) else None, now)  # type: ignore[arg-type]
        elif action == "lines":
            r.feed_activity(now, ["a line"])
        s = r.snapshot(now)
        assert s.elapsed == now
        assert s.remaining_timeout is not None and 0 <= s.remaining_timeout <= 900
        assert s.progress is None or 0.0 <= s.progress <= 1.0
        if s.state is State.READY:
            assert ready_evidence or s.probe_ok
        if s.state is State.CRASHED:
            assert s.cause is not None and s.cause in s.errors
        if before.state in (State.CRASHED, State.TIMED_OUT) and s.run == before.run:
            assert s.state is before.state  # final verdicts stick within a run
        starts = [p.start for p in s.phases]
        assert starts == sorted(starts)
