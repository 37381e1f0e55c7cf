"""The follower's inotify watcher is watchfiles' own RustNotify, loaded without the package's helpers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_follower_is_woken_by_inotify_without_importing_anyio_or_the_watch_helpers(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    out = _run(f"""
        import sys, threading, time
        from pathlib import Path
        from symmtui.core.follow import LogFollower, LogLine
        log = Path({str(log)!r})
        got, stop = [], threading.Event()
        def on_batch(items):
            got.extend(i.text for i in items if isinstance(i, LogLine))
            if "second" in got:
                stop.set()
        f = LogFollower(log)
        t = threading.Thread(target=f.watch, args=(stop, on_batch), kwargs={{"timeout_ms": 60000}})
        t.start()
        while "watchfiles._rust_notify" not in sys.modules:
            time.sleep(0.01)
        log.write_text("first\\n")
        time.sleep(0.1)
        with open(log, "a") as fh:
            fh.write("second\\n")
        t.join(10)
        print(got, sorted(m for m in ("anyio", "watchfiles", "watchfiles.main", "multiprocessing") if m in sys.modules))
    """)
    assert out == "['first', 'second'] []"  # woken by inotify: the safety-net poll is 60 s away


def test_a_later_import_of_watchfiles_reuses_the_loaded_extension() -> None:
    out = _run("""
        from symmtui.core.inotify import rust_notify
        cls = rust_notify()
        import watchfiles.main
        print(cls is not None and cls is watchfiles.main.RustNotify and rust_notify() is cls)
    """)
    assert out == "True"
