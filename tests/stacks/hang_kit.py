"""A hung server stand-in: the demo server's hang story, 8 rank processes, one stuck in NCCL init."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from tests.launch.helpers import free_port

TP = 8


def ranks_logged(log: Path, tp: int) -> bool:
    """Every rank said "begin" and all but the hung one "ends": the tree is where the story puts it."""
    text = log.read_text() if log.exists() else ""
    return text.count("Init torch distributed begin.") == tp and text.count("Init torch distributed ends.") == tp - 1


@contextmanager
def hung_server(tmp: Path, *, hang_rank: int = 5, tp: int = TP) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """The demo server with ``--hang-rank``: its stdout is the log; yields once every rank is in place."""
    log = tmp / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "symmtui.demo.server", "--speed", "1000", "--tp", str(tp),
             "--hang-rank", str(hang_rank), "--port", str(free_port())],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    ranks: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 30
        while not ranks_logged(log, tp):
            assert proc.poll() is None, f"the stand-in exited early: {log.read_text()}"
            assert time.monotonic() < deadline, f"the ranks never got in place: {log.read_text()}"
            time.sleep(0.05)
        yield proc, log
    finally:
        with contextlib.suppress(psutil.Error):
            ranks = psutil.Process(proc.pid).children()
        proc.terminate()
        proc.wait(10)
        ended(ranks)  # the ranks end with their parent (PR_SET_PDEATHSIG)


def ended(procs: list[psutil.Process], timeout: float = 10.0) -> None:
    """Wait until every one of ``procs`` has ended: gone, or a zombie (dead, its exit not yet collected by
    whoever adopted it; psutil.wait_procs waits for that too, which this machine's init does about once a
    second). Raises AssertionError naming the ones still running at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        running = []
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                if p.status() != psutil.STATUS_ZOMBIE:
                    running.append(p.pid)
        if not running:
            return
        assert time.monotonic() < deadline, f"still running {timeout:g} s after their parent ended: {running}"
        time.sleep(0.02)
