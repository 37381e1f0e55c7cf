"""Attaching to a long log: `wait` judges the last launch, found by reading backwards; true line numbers."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import symmtui.bringup.lastrun as lastrun
import symmtui.logs.follow as follow
from symmtui.bringup.lastrun import find_last_launch
from symmtui.judge.readiness import State
from symmtui.judge.rules import RuleSet

from .engine_kit import FIXTURES, KEYERROR_LOG, READY_LOG, env, symmtui_cmd, wait_on

BIG_WRITER = FIXTURES / "big_log_writer.py"
VLLM_401 = FIXTURES.parent / "corpus" / "cases" / "vllm-opea2237-hf-401-unauthorized.log"
SERVING = f"fill:{READY_LOG}:163:165"  # GET /get_model_info, a Prefill batch, POST /generate 200
MB = 1 << 20


def _write(path: Path, *parts: str) -> dict[str, object]:
    """Build the log with a separate writer process; returns its {"size", "starts"}."""
    r = subprocess.run([sys.executable, str(BIG_WRITER), str(path), *parts], capture_output=True, text=True,
                       timeout=120, check=True)
    info: dict[str, object] = json.loads(r.stdout)
    return info


def _line_of(path: Path, needle: bytes, *, after: int = 0) -> int:
    """The file's own 1-based number of the first line at or after byte ``after`` holding ``needle``."""
    data = path.read_bytes()
    i = data.index(needle, after)
    return data.count(b"\n", 0, i) + 1


def _wait_cli(log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(symmtui_cmd("wait", "--log", str(log), "--timeout", "20", "--no-record", *args),
                          capture_output=True, text=True, timeout=120, env=env())


def test_wait_judges_the_last_launch_of_a_long_log_with_true_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    info = _write(log, f"file:{READY_LOG}", f"{SERVING}:{30 * MB}", f"file:{KEYERROR_LOG}")
    starts = info["starts"]
    assert isinstance(starts, list)
    r = _wait_cli(log)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "log attached: judging the last launch" in out
    head = [ln for ln in out.splitlines() if ln.startswith("CRASHED after ")]
    assert head and head[0].endswith(": KeyError: 12 at torch_symm_mem.py:83 (8 ranks)")
    # the first traceback of the last launch, numbered as in the file (300k lines before it)
    first = _line_of(log, b"Scheduler hit an exception", after=starts[2])
    assert first > 300_000
    assert f"--- first error (line {first}) ---" in out
    assert "the log holds" not in out  # the earlier launch is not judged, not counted as read


def test_an_earlier_crash_is_not_reported_for_a_ready_last_launch(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    _write(log, f"file:{KEYERROR_LOG}", f"{SERVING}:{20 * MB}", f"file:{READY_LOG}", f"{SERVING}:{2 * MB}")
    r = _wait_cli(log)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "READY after" in r.stdout
    assert "KeyError" not in r.stdout
    assert "judging the last launch" in r.stdout


def test_no_launch_start_in_the_window_judges_the_recent_part_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lastrun, "WINDOW", 4 * MB)
    monkeypatch.setattr(lastrun, "FALLBACK", 2 * MB)
    log = tmp_path / "server.log"
    # a launch that crashed long ago, hours of serving, then the tail of a crash (its start is long gone)
    info = _write(log, f"file:{KEYERROR_LOG}", f"{SERVING}:{24 * MB}", f"lines:{KEYERROR_LOG}:10:122")
    starts = info["starts"]
    assert isinstance(starts, list)
    out = io.StringIO()
    res = wait_on(log, out=out)
    text = out.getvalue()
    assert res.state is State.CRASHED, text
    assert "no launch start in the last 4.2 MB" in text and "judging its last 2.1 MB" in text
    first = _line_of(log, b"Scheduler hit an exception", after=starts[2])
    assert f"--- first error (line {first}) ---" in text


def test_the_count_of_the_lines_before_a_far_attach_point_begins_once_what_was_there_is_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The count takes the GIL from the judging it runs beside (a 600 MB attach): it begins after the batch that
    ends what the file held was handed on (judged, in the engine), and the numbers then become the file's own."""
    monkeypatch.setattr(follow, "ATTACH_COUNT_LIMIT", 1 * MB)
    log = tmp_path / "server.log"
    info = _write(log, f"file:{READY_LOG}", f"{SERVING}:{24 * MB}", f"file:{KEYERROR_LOG}")
    starts = info["starts"]
    assert isinstance(starts, list)
    f = follow.LogFollower(log, attach_at=lambda fd, size: (starts[2], None), batch_bytes=64 << 10)
    counting_during: list[bool] = []
    stop = threading.Event()

    def on_batch(_items: list[follow.LogItem]) -> None:
        counting_during.append(any(t.name == "symmtui-count" for t in threading.enumerate()))
        if f.caught_up:
            stop.set()

    f.watch(stop, on_batch, timeout_ms=50)
    assert counting_during and not any(counting_during), counting_during
    deadline = time.monotonic() + 60
    while not f.numbering().counted:
        assert time.monotonic() < deadline, "the lines before the attach point were never counted"
        time.sleep(0.01)
    assert f.numbering().label(1) == f"line {_line_of(log, b'', after=starts[2])}"
    f.close()


def test_lines_before_a_far_attach_point_are_counted_apart_from_the_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ATTACH_COUNT_LIMIT the lines before the attach point are counted in a thread of their own (the
    verdict never waits on it): the verdict prints the file's own line number once they are counted, ``line ~N``
    estimated from the MiB before the attach point until then; here the count is held until the verdict is out."""
    monkeypatch.setattr(follow, "ATTACH_COUNT_LIMIT", 1 * MB)  # as if the 20 MB skipped were many GB
    counted: list[int] = []
    release = threading.Event()
    real = follow.count_lines

    def counting(fd: int, start: int, end: int, block: int = follow.READ_BYTES) -> int:
        if threading.current_thread().name == "symmtui-count":
            release.wait(60)  # the verdict comes first: its numbers are estimates
        counted.append(end - start)
        return real(fd, start, end, block)

    monkeypatch.setattr(follow, "count_lines", counting)
    log = tmp_path / "server.log"
    info = _write(log, f"file:{READY_LOG}", f"{SERVING}:{20 * MB}", f"file:{KEYERROR_LOG}")
    starts = info["starts"]
    assert isinstance(starts, list)
    out = io.StringIO()
    res = wait_on(log, out=out)
    text = out.getvalue()
    release.set()
    assert res.state is State.CRASHED, text
    first = _line_of(log, b"Scheduler hit an exception", after=starts[2])
    m = re.search(r"--- first error \(line ~(\d+)\) ---", text)
    assert m is not None, text
    assert abs(int(m.group(1)) - first) <= 0.02 * first, (m.group(1), first)
    # counted since: the same follower's numbering is now the file's own
    f = follow.LogFollower(log, attach_at=lambda fd, size: (starts[2], None))
    f.poll()
    deadline = time.monotonic() + 60
    while not f.numbering().counted:
        assert time.monotonic() < deadline, "the lines before the attach point were never counted"
        time.sleep(0.01)
    assert f.numbering().label(1) == f"line {_line_of(log, b'', after=starts[2])}"
    f.close()
    # the line number is estimated, the byte offset is exact: the log pane places the event by it
    said = res.board.cause
    assert said is not None
    cause = said.event
    data = log.read_bytes()
    assert cause.offset == data.rindex(b"\n", 0, data.index(b"Scheduler hit an exception", starts[2])) + 1
    assert all(a >= starts[2] for a, _ in cause.offsets)


def test_find_last_launch_reads_backwards_and_falls_back(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    info = _write(log, f"file:{READY_LOG}", f"{SERVING}:{12 * MB}", f"file:{VLLM_401}", f"{SERVING}:{1 * MB}")
    starts = info["starts"]
    assert isinstance(starts, list)
    fd = os.open(log, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        start = find_last_launch(fd, size, RuleSet())
        # vLLM's first lines: the start is its "vLLM API server version" line, not an earlier launch
        data = log.read_bytes()
        assert start.found and start.offset == data.index(b"INFO 09-03 21:20:47 [api_server.py", starts[2])
        assert start.searched < size // 3  # it did not read the file from its start
        # a window that does not reach the vLLM launch: not found, judge the last FALLBACK bytes
        near = find_last_launch(fd, size, RuleSet(), window=MB // 2)
        assert not near.found and size - near.offset <= lastrun.FALLBACK
        assert data[near.offset - 1 : near.offset] == b"\n"
        # a small log is read whole
        assert find_last_launch(fd, size, RuleSet(), small=size).offset == 0
    finally:
        os.close(fd)


def test_a_user_launch_start_with_no_literal_is_found_by_re2_in_place(tmp_path: Path) -> None:
    """A user catalogue's launch-start entry whose pattern has no literal to look for (run by RE2, main's
    hardening) is searched for block by block in the mapped file, as the shipped markers are."""
    from symmtui.judge.rules import user_ruleset
    from symmtui.tables.catalogue import user_file

    user_file().parent.mkdir(parents=True, exist_ok=True)
    user_file().write_text("[[entry]]\nid = \"our-boot\"\nkind = \"phase\"\nroles = [\"new_run\"]\n"
                           "patterns = ['^Bo+t\\d+ \\w+$']\nsummary = \"our server boots\"\nphase = \"launching\"\n")
    log = tmp_path / "server.log"
    info = _write(log, f"{SERVING}:{10 * MB}")
    assert isinstance(info["size"], int)
    with open(log, "ab") as fh:
        fh.write(b"Booot7 again\n")
    _write(tmp_path / "tail.log", f"{SERVING}:{3 * MB}")
    with open(log, "ab") as fh:
        fh.write((tmp_path / "tail.log").read_bytes())
    data = log.read_bytes()
    fd = os.open(log, os.O_RDONLY)
    try:
        start = find_last_launch(fd, len(data), user_ruleset())
        assert start.found and start.offset == data.index(b"Booot7 again\n")
    finally:
        os.close(fd)
