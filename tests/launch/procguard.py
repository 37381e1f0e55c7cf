"""A fixture that fails a test which leaves a process behind (and kills what it left)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import psutil
import pytest

MARK = "SYMMTUI_TEST_PROC_MARK"


def _identity(p: psutil.Process) -> tuple[int, float] | None:
    try:
        return p.pid, p.create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None


def _descendants() -> set[tuple[int, float]]:
    return {i for p in psutil.Process().children(recursive=True) if (i := _identity(p)) is not None}


def _leftovers(token: str, before: set[tuple[int, float]]) -> list[psutil.Process]:
    """New descendants of this test process, plus any process carrying this test's env mark (setsid orphans).

    Descendants that were already there when the test began (e.g. a multiprocessing forkserver another test
    module started for the whole session) are not this test's."""
    me = os.getpid()
    found: dict[int, psutil.Process] = {}
    for p in psutil.Process(me).children(recursive=True):
        if _identity(p) not in before:
            found[p.pid] = p
    for p in psutil.process_iter():
        if p.pid == me or p.pid in found:
            continue
        try:
            if p.environ().get(MARK) == token:
                found[p.pid] = p
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    out = []
    for p in found.values():
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return out


@pytest.fixture(autouse=True)
def no_leftover_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every process the test starts inherits a mark; after the test none may be alive."""
    token = uuid.uuid4().hex
    before = _descendants()
    monkeypatch.setenv(MARK, token)
    yield token
    left = _leftovers(token, before)
    deadline = time.monotonic() + 2.0
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _leftovers(token, before)
    if not left:
        return
    desc = []
    for p in left:
        try:
            desc.append(f"pid {p.pid}: {' '.join(p.cmdline())}")
            p.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    psutil.wait_procs(left, timeout=5)
    pytest.fail("test left processes behind (now killed): " + "; ".join(desc))
