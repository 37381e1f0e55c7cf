"""The follower's inotify watcher (libc through ctypes): woken by a write at once, idle without wakes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from symmtui.logs.follow import LogFollower, LogItem, LogLine
from symmtui.logs.inotify import DirWatch


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_follower_is_woken_by_inotify_without_importing_watchfiles(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    out = _run(f"""
        import sys, threading, time
        from pathlib import Path
        from symmtui.logs.follow import LogFollower, LogLine
        log = Path({str(log)!r})
        got, stop = [], threading.Event()
        def on_batch(items):
            got.extend(i.text for i in items if isinstance(i, LogLine))
            if "second" in got:
                stop.set()
        f = LogFollower(log)
        t = threading.Thread(target=f.watch, args=(stop, on_batch), kwargs={{"timeout_ms": 60000}})
        t.start()
        while f._watch is None:
            time.sleep(0.01)
        log.write_text("first\\n")
        time.sleep(0.1)
        with open(log, "a") as fh:
            fh.write("second\\n")
        t.join(10)
        print(got, sorted(m for m in ("anyio", "watchfiles", "multiprocessing") if m in sys.modules))
    """)
    assert out == "['first', 'second'] []"  # woken by inotify: the safety-net poll is 60 s away


def test_a_watch_waits_for_a_change_or_a_wake(tmp_path: Path) -> None:
    with DirWatch([str(tmp_path)]) as watch:
        assert watch.wait(0.05) is False  # nothing happened
        (tmp_path / "x.log").write_text("a\n")
        assert watch.wait(5) is True
        assert watch.wait(0.05) is False  # the events were drained
        threading.Timer(0.05, watch.wake).start()
        t0 = time.monotonic()
        assert watch.wait(5) is True and time.monotonic() - t0 < 4
    watch.wake()  # after close: nothing written anywhere, no error


def test_wake_ends_watch_at_once_and_an_idle_follower_uses_no_cpu(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("start\n")
    f = LogFollower(log)
    stop = threading.Event()
    got: list[LogItem] = []
    t = threading.Thread(target=f.watch, args=(stop, got.extend), kwargs={"timeout_ms": 60000})
    t.start()
    while f._watch is None:
        time.sleep(0.01)
    c0 = time.thread_time()  # this thread's; the follower's own is checked through the process below
    p0 = time.process_time()
    time.sleep(1.0)
    idle_cpu = time.process_time() - p0 - (time.thread_time() - c0)
    stop.set()
    f.wake()
    t.join(1.0)
    assert not t.is_alive()
    assert [i.text for i in got if isinstance(i, LogLine)] == ["start"]
    # 10 looks at the stop event a second cost microseconds; RustNotify's 200 cost ~16 ms of CPU a second
    assert idle_cpu < 0.005, idle_cpu
    f.close()


def test_a_directory_that_cannot_be_watched_is_an_oserror(tmp_path: Path) -> None:
    try:
        DirWatch([str(tmp_path / "missing")])
    except OSError as exc:
        assert "inotify_add_watch" in str(exc)
    else:
        raise AssertionError("no error for a missing directory")
    assert os.path.isdir(tmp_path)


def test_events_about_other_files_in_the_directory_do_not_wake_the_watch(tmp_path: Path) -> None:
    with DirWatch([str(tmp_path)], frozenset({b"server.log"})) as watch:
        (tmp_path / "other.log").write_text("noise\n")
        assert watch.wait(0.2) is False  # read and dropped
        (tmp_path / "server.log").write_text("a\n")
        assert watch.wait(5) is True
