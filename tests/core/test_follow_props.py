"""Property tests: any split of the byte stream gives the same lines; rotation/append interleavings lose nothing."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symmtui.logs.decode import LogLine, make_lines
from symmtui.logs.follow import FileNotice, LogFollower, iter_lines
from tests.core.follow_kit import poll_all

ANSI = re.compile(r"\x1b(?:\[[0-9;]*m?)?")  # also a sequence the cap cut short

# Line bodies built from the troublesome pieces: CR, ANSI, NUL, invalid UTF-8, multibyte text.
PIECES = st.sampled_from(
    [b"a", b"load ", b"\r", b"\r", b"\x1b[31m", b"\x1b[0m", b"\x00", b"\xff", b"\xe2\x82", b"\xc3\xa9", b"12%", b" "]
)
BODY = st.lists(PIECES, max_size=12).map(b"".join)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def oracle(raw: bytes, cap: int) -> tuple[str, str, bool]:
    """What one finished line must become, written the slow obvious way."""
    raw = raw.replace(b"\x00", b"")
    segs = [s for s in raw.split(b"\r") if s]
    vis = segs[-1] if segs else b""
    truncated = len(vis) > cap
    if truncated:
        # Cut at the cap, moved back (at most 3 bytes) to the start of a character the cut would split.
        keep = next((k for k in range(cap, max(cap - 4, 0), -1) if vis[k] & 0xC0 != 0x80), cap)
        vis = vis[:keep]
    text = vis.decode("utf-8", "replace")
    return text, ANSI.sub("", text), truncated


def expected(bodies: list[bytes], cap: int) -> list[tuple[int, int, str, str, bool]]:
    out = []
    offset = 0
    for no, raw in enumerate(bodies, 1):
        text, plain, truncated = oracle(raw, cap)
        out.append((no, offset, text, plain, truncated))
        offset += len(raw) + 1
    return out


def finals(items: list[object]) -> list[tuple[int, int, str, str, bool]]:
    return [
        (i.no, i.offset, i.text, i.plain, i.truncated)
        for i in items
        if isinstance(i, LogLine) and not i.progress
    ]


@SETTINGS
@given(bodies=st.lists(BODY, min_size=1, max_size=25), cap=st.sampled_from([16, 64, 1 << 16]))
def test_make_lines_matches_the_oracle(bodies: list[bytes], cap: int) -> None:
    out: list[LogLine] = []
    assert make_lines(b"\n".join(bodies), 1, 0, cap, out) == len(bodies)
    assert finals(out) == expected(bodies, cap)  # type: ignore[arg-type]


@SETTINGS
@given(
    bodies=st.lists(BODY, min_size=1, max_size=25),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    cap=st.sampled_from([16, 64, 1 << 16]),
)
def test_any_split_into_writes_gives_the_same_lines(bodies: list[bytes], cuts: list[int], cap: int) -> None:
    stream = b"".join(b + b"\n" for b in bodies)
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "s.log"
        follower = LogFollower(log, max_line_bytes=cap)
        items: list[object] = list(poll_all(follower))
        with open(log, "ab", buffering=0) as fh:
            for a, b in zip(points, points[1:], strict=False):
                fh.write(stream[a:b])
                items += poll_all(follower)
        follower.close()
    assert finals(items) == expected(bodies, cap)
    # Every provisional progress update belongs to a line that is finished later, at the same offset.
    final_offsets = {f[1] for f in finals(items)}
    for i, item in enumerate(items):
        if isinstance(item, LogLine) and item.progress:
            assert item.offset in final_offsets
            assert not any(isinstance(x, LogLine) and x.offset > item.offset for x in items[:i])
    # Reading the finished file at once agrees too.
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "s.log"
        log.write_bytes(stream)
        whole = [x for batch in iter_lines(log, max_line_bytes=cap, batch_bytes=37) for x in batch]
    assert finals(whole) == expected(bodies, cap)  # type: ignore[arg-type]


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("line"), st.integers(0, 3)),
        st.tuples(st.just("partial"), st.integers(0, 3)),
        st.tuples(st.just("rotate"), st.integers(0, 2)),
        st.tuples(st.just("delete"), st.just(0)),
        st.tuples(st.just("create"), st.just(0)),
        st.tuples(st.just("truncate"), st.just(0)),
    ),
    max_size=40,
)


@SETTINGS
@given(ops=OPS, tail=st.sampled_from([None, 0, 2]))
def test_rotation_and_appends_lose_no_line(ops: list[tuple[str, int]], tail: int | None) -> None:
    """Drive rename+recreate (with late writes to the old file) / delete / truncate / appends, polling after each step."""
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "s.log"
        log.write_bytes(b"pre 1\npre 2\npre 3\n")
        follower = LogFollower(log, tail_lines=tail)
        items: list[object] = list(poll_all(follower))
        want = {None: ["pre 1", "pre 2", "pre 3"], 0: [], 2: ["pre 2", "pre 3"]}[tail]
        seq = 0
        partial = ""
        rotations = 0
        truncations = 0
        for op, arg in ops:
            if op == "line" and log.exists():
                text = f"{partial}line {seq}" + " x" * arg
                seq += 1
                with open(log, "ab") as fh:
                    fh.write(text[len(partial) :].encode() + b"\n")
                want.append(text)
                partial = ""
            elif op == "partial" and log.exists():
                piece = f"p{seq}-{arg}"
                with open(log, "ab") as fh:
                    fh.write(piece.encode())
                partial += piece
            elif op == "rotate" and log.exists():
                rotations += 1
                old = log.with_name(f"s.log.{rotations}")
                os.rename(log, old)
                with open(old, "ab") as fh:  # the server still holds the renamed file and writes on
                    for k in range(arg):
                        fh.write(f"late {seq}.{k}\n".encode())
                        want.append(f"{partial}late {seq}.{k}")
                        partial = ""
                log.write_bytes(b"")
                if partial:
                    want.append(partial)  # the old file ended without a newline: flushed as a line
                    partial = ""
            elif op == "delete" and log.exists():
                log.unlink()  # a pending partial line stays pending: the writer might still finish it
            elif op == "truncate" and log.exists():
                os.truncate(log, 0)  # copytruncate, after the follower has read everything
                truncations += 1
                if partial:
                    want.append(partial)  # its rest will never come: flushed as it is
                    partial = ""
            elif op == "create" and not log.exists():
                log.write_bytes(b"")
                if partial:
                    want.append(partial)  # the deleted file is done now: its last line is flushed
                    partial = ""
            items += poll_all(follower)
        follower.close()
    got = [i.text for i in items if isinstance(i, LogLine) and not i.progress]
    assert got == want  # a trailing partial line is still pending, not emitted
    kinds = [i.kind for i in items if isinstance(i, FileNotice)]
    assert kinds.count("rotated") == rotations
    # A truncation is only visible when the file had been read past 0 bytes.
    assert kinds.count("truncated") <= truncations
