"""Opt-in pytest plugin: the CPU each test file spends, its worker's own and its reaped children's, summed over
the xdist workers. `.venv/bin/python -m pytest -p tests.cpu_report` prints the 30 costliest files at the end.

The suite is CPU-bound on 2 cores (docs/testing.md): wall-clock durations say more about the load than about a
test; this says where the CPU goes. Children count once reaped (a daemon that outlives its test, a tmux
server, is not in it)."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Generator

import pytest

SHOWN = 30
_KEY = "cpu_report"
_start: dict[str, os.times_result] = {}
_files: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, None]:
    """Each phase's CPU (setup, call, teardown) rides on its report, which xdist carries to the controller."""
    if call.when == "setup":
        _start[item.nodeid] = os.times()
    outcome = yield
    t0, t1 = _start.get(item.nodeid), os.times()
    if t0 is None:
        return
    own = t1.user + t1.system - t0.user - t0.system
    kids = t1.children_user + t1.children_system - t0.children_user - t0.children_system
    _start[item.nodeid] = t1
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.user_properties.append((_KEY, (own, kids)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for key, value in report.user_properties:
        if key == _KEY:
            row = _files[report.nodeid.split("::")[0]]
            row[0] += value[0]
            row[1] += value[1]
            row[2] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _files:
        return  # a worker, or nothing ran
    own = sum(r[0] for r in _files.values())
    kids = sum(r[1] for r in _files.values())
    terminalreporter.section(f"CPU by test file: {own + kids:.0f} CPU-s ({own:.0f} in the workers, {kids:.0f} "
                             "in their reaped children)")
    ranked = sorted(_files.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:SHOWN]
    for path, (o, k, wall) in ranked:
        terminalreporter.write_line(f"{o + k:7.1f} CPU-s  (own {o:6.1f}, children {k:6.1f}; {wall:6.1f} s of "
                                    f"durations)  {path}")
