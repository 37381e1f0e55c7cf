"""Issue 7, log faults: each one created for real against a following LogFollower, outcome asserted."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from symmtui.logs.follow import DEFAULT_MAX_LINE_BYTES, LogFollower, LogItem, LogLine
from tests.core.follow_kit import WAIT, Collector, Writer, final, finish_flood, notices, start_flood

REPO = Path(__file__).resolve().parents[2]
CHILD = REPO / "tests" / "fixtures" / "follow_child.py"


def lines(c: Collector) -> list[LogLine]:
    with c.cond:
        return [i for i in c.items if isinstance(i, LogLine) and not i.progress]


def test_log_rotated_mid_load(tmp_path: Path) -> None:
    """logrotate (rename + create) while shards load: every line once, a 'rotated' notice, numbering restarts."""
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        w.write("[TP0] Load weight begin. avail mem=93.21 GB\n")
        for i in range(3):
            w.write(f"\rLoading safetensors checkpoint shards: {i * 10}% Completed | {i}/10")
        assert c.wait_for(lambda items: any(isinstance(x, LogLine) and x.progress for x in items))
        w.do("rename", to=str(tmp_path / "server.log.1"))
        w.write("\rLoading safetensors checkpoint shards:  30% Completed | 3/10\n")  # still the old fd
        w.write("[TP0] still loading (old file)\n")
        w.do("reopen")
        w.write("[TP0] Load weight end. type=GlmForCausalLM\n")
        assert c.wait_text("[TP0] Load weight end. type=GlmForCausalLM")
        got = lines(c)
        assert c.kinds()[-3:] == ["opened", "rotated", "opened"]
    assert [(x.no, x.text) for x in got] == [
        (1, "[TP0] Load weight begin. avail mem=93.21 GB"),
        (2, "Loading safetensors checkpoint shards:  30% Completed | 3/10"),
        (3, "[TP0] still loading (old file)"),
        (1, "[TP0] Load weight end. type=GlmForCausalLM"),
    ]


def test_log_truncated_copytruncate(tmp_path: Path) -> None:
    """copytruncate: a 'truncated' notice, new lines from line 1, nothing re-emitted."""
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        for i in range(5):
            w.write(f"before {i}\n")
        assert c.wait_text("before 4")
        shutil.copyfile(log, tmp_path / "server.log.1")
        w.do("truncate")
        w.write("after 0\n")
        assert c.wait_text("after 0")
        got = lines(c)
        trunc = notices(c.items, "truncated")
    assert [x.text for x in got] == [f"before {i}" for i in range(5)] + ["after 0"]
    assert got[-1].no == 1 and got[-1].offset == 0
    assert len(trunc) == 1 and "truncated" in trunc[0].message


def test_log_deleted_and_recreated(tmp_path: Path) -> None:
    """rm server.log while the server writes on: its lines still come; a new file is then followed."""
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log), timeout_ms=60_000) as c:  # events only
        w.write("one\n")
        assert c.wait_text("one")
        w.do("unlink")
        assert c.wait_notice("deleted")
        w.write("two (into the deleted file)\n")
        assert c.wait_text("two (into the deleted file)")
        w.do("reopen")
        w.write("three (new file)\n")
        assert c.wait_text("three (new file)")
        got = lines(c)
        assert c.kinds()[-2:] == ["deleted", "opened"]
    assert [(x.no, x.text) for x in got] == [(1, "one"), (2, "two (into the deleted file)"), (1, "three (new file)")]


def test_log_directory_deleted_and_recreated(tmp_path: Path) -> None:
    """rm -rf of the log directory: 'deleted', then the follower waits on the parent and resumes."""
    d = tmp_path / "logs"
    d.mkdir()
    log = d / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        w.write("first\n")
        assert c.wait_text("first")
        shutil.rmtree(d)
        assert c.wait_notice("deleted")
        d.mkdir()
        w.do("reopen")
        w.write("second\n")
        assert c.wait_text("second")
    assert [x.text for x in lines(c)] == ["first", "second"]


def test_log_10mb_line_is_capped_while_streaming(tmp_path: Path) -> None:
    """A 10 MB line: one truncated LogLine of max_line_bytes, memory stays far below 10 MB, next line intact."""
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    tracemalloc.start()
    try:
        with Writer(log) as w, Collector(LogFollower(log)) as c:
            for _ in range(10):
                w.write("z" * (1 << 20))
            w.write("\nKeyError: 12\n")
            assert c.wait_text("KeyError: 12")
            _, peak = tracemalloc.get_traced_memory()
            got = lines(c)
    finally:
        tracemalloc.stop()
    assert [(len(x.text), x.truncated) for x in got] == [(DEFAULT_MAX_LINE_BYTES, True), (12, False)]
    assert got[1].offset == 10 * (1 << 20) + 1
    assert peak < 8 << 20, f"peak traced memory {peak / 1e6:.1f} MB while streaming a 10 MB line"


def test_log_invalid_utf8(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        w.write("bad \xff\xfe\xc3 bytes\n")  # latin-1 escapes: raw bytes 0xff 0xfe 0xc3
        w.write("good\n")
        assert c.wait_text("good")
    assert [x.text for x in lines(c)] == ["bad \ufffd\ufffd\ufffd bytes", "good"]


def test_log_nul_bytes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        w.write("\x00\x00\x00\n")
        w.write("Segmentation\x00 fault\n")
        assert c.wait_text("Segmentation fault")
    assert [(x.text, x.plain) for x in lines(c)] == [("", ""), ("Segmentation fault", "Segmentation fault")]


def test_log_ansi_escapes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        w.write("\x1b[31mTraceback (most recent call last):\x1b[0m\n")
        w.write("\x1b]0;title\x07\x1b[1mdone\x1b[0m\n")
        assert c.wait_for(lambda items: sum(final(i) for i in items) == 2)
    got = lines(c)
    assert got[0].text.startswith("\x1b[31m") and got[0].plain == "Traceback (most recent call last):"
    assert got[1].plain == "done"


def test_log_cr_progress_bars(tmp_path: Path) -> None:
    """tqdm over a file: provisional updates (progress=True) at one offset, then one finished line."""
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        w.write("Capture cuda graph begin.\n")
        for i in range(1, 24):
            w.write(f"\rCapturing batches (bs=160 avail_mem=20.1 GB): {i * 100 // 23}%| {i}/23")
            if i % 6 == 0:  # give the follower a chance to show a live update
                assert c.wait_for(lambda items, i=i: any(
                    isinstance(x, LogLine) and x.progress and x.text.endswith(f" {i}/23") for x in items))
        w.write("\nCapture cuda graph end. Time elapsed: 32.1 s.\n")
        assert c.wait_text("Capture cuda graph end. Time elapsed: 32.1 s.")
        with c.cond:
            items = list(c.items)
    updates = [x for x in items if isinstance(x, LogLine) and x.progress]
    finished = [x for x in items if isinstance(x, LogLine) and not x.progress]
    assert len(updates) >= 3 and len({u.offset for u in updates}) == 1
    assert [x.text for x in finished] == [
        "Capture cuda graph begin.",
        "Capturing batches (bs=160 avail_mem=20.1 GB): 100%| 23/23",
        "Capture cuda graph end. Time elapsed: 32.1 s.",
    ]
    assert finished[1].offset == updates[0].offset and finished[1].no == updates[0].no == 2


def test_log_flood_50k_lines_per_second(tmp_path: Path) -> None:
    """50k lines/s for 2 s from a writer process: every line counted once, batches stay bounded.

    The 10 s version with peak RSS is in bench/follow.py.
    """
    log = tmp_path / "server.log"
    seen = 0
    out_of_order: list[int] = []
    biggest = 0
    total = 100_000
    done = threading.Event()

    def on_batch(items: list[LogItem]) -> None:
        nonlocal seen, biggest
        biggest = max(biggest, len(items))
        for it in items:
            if isinstance(it, LogLine):
                if int(it.text[4:13]) != seen:
                    out_of_order.append(seen)
                seen += 1
        if seen >= total:
            done.set()

    follower = LogFollower(log)
    stop = threading.Event()
    t = threading.Thread(target=follower.watch, args=(stop, on_batch))
    t.start()
    try:
        report = finish_flood(start_flood(log, rate=50_000, seconds=2.0), timeout=WAIT * 3)
        assert report["lines"] == total
        assert done.wait(WAIT)
    finally:
        stop.set()
        t.join(WAIT)
        follower.close()
    assert not t.is_alive()
    assert seen == total and out_of_order == []
    # A poll reads at most BATCH_BYTES (4 MiB): with 74-byte lines that bounds a batch.
    assert biggest <= (4 << 20) // 74 + 2


def test_log_path_replaced_by_directory_is_an_error_then_recovers(tmp_path: Path) -> None:
    """The error path that works even for root: the log path becomes a directory."""
    log = tmp_path / "server.log"
    with Collector(LogFollower(log)) as c:
        log.write_text("a\n")
        assert c.wait_text("a")
        log.unlink()
        assert c.wait_notice("deleted")  # (a directory made before the follower looks would be the error alone)
        log.mkdir()
        assert c.wait_notice("error")
        assert "is a directory" in notices(c.items, "error")[0].message
        log.rmdir()
        log.write_text("b\n")
        assert c.wait_text("b")
        # between rmdir and the write the path may be seen missing ("waiting"): no error, and it recovers
        assert [k for k in c.kinds() if k != "waiting"][-3:] == ["deleted", "error", "opened"]


# -- permissions, for real: a follower process that permissions apply to -------------------------


def _drop_dac_caps() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: without them root obeys file modes
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            os._exit(97)


class ChildFollower:
    """tests/fixtures/follow_child.py in a process without DAC override, items read as JSON lines."""

    def __init__(self, path: Path) -> None:
        self.items: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            preexec_fn=_drop_dac_caps if os.geteuid() == 0 else None,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self.cond:
                self.items.append(json.loads(raw))
                self.cond.notify_all()

    def wait(self, key: str, value: str) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: any(i.get(key) == value for i in self.items), WAIT)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(WAIT)


@pytest.fixture
def child_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "perm"
    d.mkdir()
    yield d
    for p in (d, *d.iterdir()):  # give permissions back so tmp cleanup works
        p.chmod(0o755)


def test_log_permissions_removed_mid_run(child_dir: Path) -> None:
    """chmod 000 mid-run, in a follower process the modes apply to (root's DAC override dropped).

    The open file keeps being read (permissions are checked at open); a rotated-in file that is
    unreadable gives one clear 'error' notice and is picked up when its mode is fixed; a directory
    that loses its search bit gives an 'error' notice and reading of the open file goes on.
    """
    log = child_dir / "server.log"
    log.write_text("start\n")
    log.chmod(0o644)
    child = ChildFollower(log)
    try:
        assert child.wait("line", "start"), child.items
        log.chmod(0o000)
        with open(log, "a") as fh:  # the test itself is root: it can still write
            fh.write("after chmod 000 (fd still open)\n")
        assert child.wait("line", "after chmod 000 (fd still open)")

        os.rename(log, child_dir / "server.log.1")
        fd = os.open(log, os.O_WRONLY | os.O_CREAT, 0o000)
        os.write(fd, b"new file line\n")
        os.close(fd)
        assert child.wait("notice", "error"), child.items
        err = next(i for i in child.items if i.get("notice") == "error")
        assert "Permission denied" in err["message"] and "chmod" in err["message"]
        log.chmod(0o644)
        with open(log, "a") as fh:
            fh.write("readable again\n")
        assert child.wait("line", "readable again")

        child_dir.chmod(0o000)
        with open(log, "a") as fh:
            fh.write("dir locked\n")
        assert child.wait("line", "dir locked")
        errors = [i for i in child.items if i.get("notice") == "error"]
        assert len(errors) >= 2 and "cannot check" in errors[-1]["message"]
        child_dir.chmod(0o755)
        with open(log, "a") as fh:
            fh.write("dir open\n")
        assert child.wait("line", "dir open")
    finally:
        child_dir.chmod(0o755)
        child.close()
    assert child.proc.returncode == 0, f"follower process failed (rc={child.proc.returncode})"
    texts = [i["line"] for i in child.items if "line" in i]
    assert texts == ["start", "after chmod 000 (fd still open)", "new file line", "readable again",
                     "dir locked", "dir open"]
    assert [i["notice"] for i in child.items if "notice" in i][-2:] == ["error", "opened"]
