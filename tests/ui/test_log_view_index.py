"""The log pane's line index without Textual: numbering, progress rows, blocks, view mapping, pruning, search."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symmtui.core.decode import LogLine
from symmtui.core.events import Event, EventBuilder
from symmtui.core.rules import Kind
from symmtui.ui.widgets.log_index import (
    BLOCK,
    BLOCK_END,
    CRASH,
    ERRORISH,
    KIND_MASK,
    READY,
    WARNING,
    LineIndex,
)


def write_log(path: Path, texts: list[str]) -> list[LogLine]:
    """Write `texts` as a real file and return the LogLines a follower would give (exact offsets)."""
    data = b""
    lines: list[LogLine] = []
    for no, text in enumerate(texts, 1):
        lines.append(LogLine(no, len(data), text, text))
        data += text.encode() + b"\n"
    path.write_bytes(data)
    return lines


def tb(rank: int, exc: str = "KeyError: 12") -> list[str]:
    return [
        f"[2026-11-29 09:40:17 TP{rank}] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 2714, in run_scheduler_process',
        "    scheduler = Scheduler(",
        '  File "/x/sglang/srt/distributed/device_communicators/torch_symm_mem.py", line 83, in __init__',
        "    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]",
        exc,
    ]


def lines_of(texts: list[str], start_no: int = 1, start_offset: int = 0) -> list[LogLine]:
    out = []
    off = start_offset
    for i, t in enumerate(texts):
        out.append(LogLine(start_no + i, off, t, t))
        off += len(t.encode()) + 1
    return out


def test_rejects_a_ring_larger_than_the_row_limit() -> None:
    with pytest.raises(ValueError, match="ring"):
        LineIndex(ring=10, max_rows=5)


def test_progress_updates_replace_their_row_and_numbering_stays_right() -> None:
    index = LineIndex()
    index.append(lines_of(["a", "b"]))
    r = index.append([LogLine(3, 4, "10%", "10%", progress=True)])
    assert r.added == 1 and index.rows == 3
    r = index.append([LogLine(3, 4, "50%", "50%", progress=True), LogLine(3, 4, "100%", "100%")])
    assert r.added == 0 and r.replaced == [2, 2]
    assert index.rows == 3 and index.text(2) == "100%"
    index.append([LogLine(4, 9, "after", "after")])
    assert index.text(3) == "after"
    # the finished line is no longer provisional: a later item at another offset appends
    assert [index.row_for_no(n) for n in (1, 2, 3, 4)] == [0, 1, 2, 3]
    assert index.no_for_row(3) == 4


def test_numbering_jumps_are_kept_without_one_integer_per_row() -> None:
    index = LineIndex()
    index.append(lines_of(["a", "b", "c"], start_no=1))
    index.append(lines_of(["x", "y"], start_no=101))  # the follower attached with a tail: numbers skip
    assert index.row_for_no(2) == 1
    assert index.row_for_no(101) == 3 and index.row_for_no(102) == 4
    assert index.row_for_no(50) == 2, "a number that is not kept maps to the row before it"
    assert index.row_for_no(103) is None
    assert index.no_for_row(4) == 102


def fed(texts: list[str], index: LineIndex | None = None, start_no: int = 1, start_offset: int = 0,
        builder: EventBuilder | None = None, *, flush: bool = True) -> LineIndex:
    """An index fed ``texts`` and the real engine's events for them (its only source of blocks and marks)."""
    index = index if index is not None else LineIndex()
    builder = builder if builder is not None else EventBuilder()
    lines = lines_of(texts, start_no, start_offset)
    index.append(lines)
    index.add_events([ev for line in lines for ev in builder.feed(line)] + (builder.flush() if flush else []))
    return index


def test_traceback_is_one_block_from_its_event_and_its_span() -> None:
    index = LineIndex()
    lines = lines_of(["start"] + tb(0) + ["", "after"])
    index.append(lines)
    assert index.blocks == [] and not any(index.flags(r) & ERRORISH for r in range(9)), "no event: no block"
    builder = EventBuilder()
    events = [ev for line in lines for ev in builder.feed(line)]
    assert [ev.spans for ev in events if ev.kind is Kind.CRASH] == [((2, 7),)]
    index.add_events(events)
    assert len(index.blocks) == 1
    block = index.blocks[0]
    assert (block.start, block.end) == (1, 6)
    assert block.summary() == "KeyError: 12 at torch_symm_mem.py:83"
    assert all(index.flags(r) & BLOCK and index.flags(r) & KIND_MASK == CRASH for r in range(1, 7))
    assert index.flags(6) & BLOCK_END
    assert not index.flags(7) & ERRORISH and not index.flags(8) & ERRORISH
    # view: the summary row sits just above the block's first row
    assert [index.view_entry(y) for y in range(4)] == [(False, 0), (True, 0), (False, 1), (False, 2)]
    assert index.view_y(1, summary=True) == 1 and index.view_y(1) == 2
    assert index.targets == [1]


def test_a_quoted_traceback_header_is_not_a_block_as_the_engine_says() -> None:
    quoted = ["INFO grep for 'Traceback (most recent call last)' found nothing", "next line",
              "[2026-11-29 09:40:03] server_args=ServerArgs(model_path='Traceback (most recent call last):')"]
    index = fed(quoted)
    assert index.blocks == [] and index.block_at(0) is None and index.block_at(2) is None
    assert all(index.flags(i) & KIND_MASK != CRASH for i in range(3))
    assert index.view_len() == 3


def test_copies_from_other_ranks_fold_under_the_first_and_unfold() -> None:
    index = fed(["start"] + tb(0) + [""] + tb(1) + [""] + tb(2) + ["", "end"])
    assert [(b.start, b.end, b.copy, b.folded) for b in index.blocks] == [
        (1, 6, False, False), (8, 13, True, True), (15, 20, True, True)]
    assert index.blocks[0].summary() == "KeyError: 12 at torch_symm_mem.py:83 ×3 ranks (2 copies folded: z)"
    shown = [index.view_entry(y) for y in range(index.view_len())]
    # the copies are hidden with the blank line above each (the gap between two copies)
    assert shown == [(False, 0), (True, 0), *((False, r) for r in range(1, 7)), (False, 21), (False, 22)]
    assert index.targets == [1] and not index.is_shown(10)
    index.set_folding(False)
    assert index.blocks[1].summary() == "KeyError: 12 at torch_symm_mem.py:83 (another copy; same as line 2)"
    assert index.targets == [1, 8, 15] and index.view_len() == 23 + 3
    assert index.find("TP2", 0) == 15
    index.set_folding(True)
    assert index.find("TP2", 0) is None, "a search skips the folded copies"


def test_an_interleaved_copy_is_marked_but_no_block_of_its_own() -> None:
    """Two ranks' tracebacks alternating line by line: their spans overlap, so only the first is a block."""
    a, b = tb(0), tb(1)
    texts = [line for pair in zip(a, b, strict=True) for line in pair]
    index = fed(texts)
    assert len(index.blocks) <= 1
    assert all(index.flags(r) & ERRORISH for r in range(len(texts)))


def test_a_copy_of_a_span_not_yet_appended_is_applied_when_its_lines_arrive() -> None:
    builder = EventBuilder()
    index = fed(tb(0) + [""] + tb(1)[:3], builder=builder, flush=False)
    assert len(index.blocks) == 1
    fed(tb(1)[3:] + ["", "end"], index, start_no=11, start_offset=5000, builder=builder)
    assert [(b.start, b.end, b.folded) for b in index.blocks] == [(0, 5, False), (7, 12, True)]


def test_events_mark_rows_and_repeated_warnings_from_other_ranks() -> None:
    warn = "TorchSymmMemCommunicator: Device capability 12 not supported, communicator is not available."
    texts = [f"[2026-11-29 09:40:20 TP{r}] {warn}" for r in range(4)] + ["The server is fired up and ready to roll!"]
    index = LineIndex()
    index.append(lines_of(texts))
    first = Event(Kind.WARNING, "symm-unsupported", warn, 1, texts[0], ranks=frozenset({0}), key="w",
                  spans=((1, 1),))
    assert index.add_events([first]) == [0]
    merged = Event(Kind.WARNING, "symm-unsupported", warn, 1, texts[0], ranks=frozenset(range(4)), count=4,
                   key="w", spans=((1, 1), (2, 2), (3, 3), (4, 4)))
    assert sorted(index.add_events([merged])) == [1, 2, 3]
    assert all(index.flags(r) & KIND_MASK == WARNING for r in range(4))
    assert index.targets == [0, 1, 2, 3]
    assert index.target_summary(2).endswith("×4 ranks")
    ready = Event(Kind.READY, "sglang-ready", "ready", 5, texts[4])
    index.add_events([ready])
    assert index.flags(4) & KIND_MASK == READY and not index.flags(4) & ERRORISH
    assert index.targets == [0, 1, 2, 3]


def test_an_event_for_a_line_not_yet_appended_is_applied_when_it_arrives() -> None:
    index = LineIndex()
    index.append(lines_of(["a"]))
    index.add_events([Event(Kind.CRASH, "killed", "Killed", 2, "Killed")])
    assert index.targets == []
    index.append(lines_of(["Killed"], start_no=2, start_offset=2))
    assert index.flags(1) & KIND_MASK == CRASH and index.targets == [1]


def test_errors_only_view_keeps_blocks_and_error_rows(tmp_path: Path) -> None:
    builder = EventBuilder()
    index = fed(["a", "b"] + tb(1) + ["", "d"], builder=builder)
    index.add_events([Event(Kind.WARNING, "w", "warn", 10, "d")])
    index.set_errors_only(True)
    entries = [index.view_entry(y) for y in range(index.view_len())]
    assert entries == [(True, 0)] + [(False, r) for r in range(2, 8)] + [(False, 9)]
    assert index.view_y(0) is None and index.view_y(9) == 7
    fed(["e"] + tb(2, "ValueError: x"), index, start_no=11, start_offset=1000, builder=builder)
    assert index.view_len() == 8 + 7
    assert index.view_entry(8) == (True, 1)


def test_pruning_keeps_memory_bounded_and_the_view_consistent() -> None:
    index = LineIndex(ring=100, max_rows=1_000)
    builder = EventBuilder()
    for chunk in range(30):
        texts = [f"row {chunk * 500 + i}" for i in range(500)]
        if chunk % 3 == 0:
            texts[10:16] = tb(chunk % 8, f"ValueError: {chunk % 2}")  # two errors, each with copies folded
        fed(texts, index, start_no=chunk * 500 + 1, start_offset=chunk * 10_000, builder=builder)
        if chunk % 3 == 0:
            assert index.blocks[-1].start == index.row_for_no(chunk * 500 + 11)
        assert index.rows <= 1_000
        assert len(index._texts) <= 200  # ring plus slack
    assert index.end == 15_000 and index.base >= 14_000
    for y in range(index.view_len()):
        is_summary, value = index.view_entry(y)
        if is_summary:
            assert index.view_y(index.blocks[value].start, summary=True) == y
        else:
            assert index.view_y(value) == y
    assert all(t >= index.base for t in index.targets)
    assert all(b.start >= index.base for b in index.blocks)


def test_read_back_from_the_file_for_rows_outside_the_ring(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    texts = [f"line {i}" for i in range(5_000)]
    texts[7] = "\x1b[1;31mred\x1b[0m with ünïcode"
    index = LineIndex(ring=100)
    index.set_file(path)
    index.append(write_log(path, texts))
    assert index.text_base > 1_000
    assert index.text(0) == "line 0"
    assert index.text(7) == "red with ünïcode"
    assert index.text(4_999) == "line 4999"
    index.close_file()


def test_read_back_keeps_the_last_carriage_return_segment(tmp_path: Path) -> None:
    path = tmp_path / "cr.log"
    path.write_bytes(b"first\nLoading 1%\rLoading 50%\rLoading 100%\nlast\n")
    index = LineIndex(ring=1, max_rows=10)
    index.set_file(path)
    index.append([LogLine(1, 0, "first", "first"), LogLine(2, 6, "Loading 100%", "Loading 100%"),
                  LogLine(3, 43, "last", "last"), LogLine(4, 48, "x", "x")])
    assert index.text_base >= 2
    assert index.text(1) == "Loading 100%"
    index.close_file()


def test_find_searches_the_ring_and_the_file_both_ways_with_smart_case(tmp_path: Path) -> None:
    path = tmp_path / "find.log"
    texts = [f"line {i}" for i in range(20_000)]
    texts[123] = "Weights shard 17 loaded"
    texts[15_000] = "weights SHARD 17 again"
    texts[19_990] = "last shard 17 in memory"
    index = LineIndex(ring=50)
    index.set_file(path)
    index.append(write_log(path, texts))
    assert index.text_base > 15_000
    assert index.find("shard 17", 0) == 123
    assert index.find("shard 17", 124) == 15_000
    assert index.find("shard 17", 15_001) == 19_990
    assert index.find("shard 17", 19_991) == 123, "wraps around"
    assert index.find("shard 17", 19_000, forward=False) == 15_000
    assert index.find("shard 17", 100, forward=False) == 19_990, "wraps backwards"
    assert index.find("SHARD", 0) == 15_000, "capitals make it case-sensitive"
    assert index.find("no such text", 0) is None
    assert index.find("", 0) is None
    index.close_file()


def test_find_in_errors_only_view_skips_hidden_rows() -> None:
    index = fed(["KeyError in a normal line"] + tb(0))
    index.set_errors_only(True)
    assert index.find("KeyError", 0) == 6


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["plain", "tb", "warn", "progress"]), min_size=1, max_size=40),
    st.booleans(),
    st.integers(min_value=5, max_value=60),
)
def test_view_mapping_round_trips(kinds: list[str], errors_only: bool, max_rows: int) -> None:
    index = LineIndex(ring=5, max_rows=max(max_rows, 5))
    index.set_errors_only(errors_only)
    builder = EventBuilder()
    no = 1
    off = 0
    for kind in kinds:
        if kind == "tb":
            texts = tb(no % 8)
        elif kind == "warn":
            texts = ["WARNING something"]
        else:
            texts = [f"row {no}"]
        batch = lines_of(texts, start_no=no, start_offset=off)
        if kind == "progress":
            batch = [LogLine(no, off, "50%", "50%", progress=True), LogLine(no, off, "99%", "99%", progress=True)]
        index.append(batch)
        index.add_events([ev for line in batch if not line.progress for ev in builder.feed(line)])
        if kind == "warn":
            index.add_events([Event(Kind.WARNING, "w", "something", no, "WARNING something")])
        no += len(texts)
        off += 1000
    seen: list[int] = []
    for y in range(index.view_len()):
        is_summary, value = index.view_entry(y)
        if is_summary:
            assert index.view_y(index.blocks[value].start, summary=True) == y
        else:
            assert index.view_y(value) == y
            seen.append(value)
            if errors_only:
                assert index.flags(value) & ERRORISH
    assert seen == sorted(seen)
    if not errors_only:
        assert seen == [r for r in range(index.base, index.end) if not index.hidden(r)]


def test_a_warning_repeated_on_every_line_is_marked_everywhere_via_the_real_builder() -> None:
    from symmtui.core.events import EventBuilder

    warn = "TorchSymmMemCommunicator: Device capability 12 not supported, communicator is not available."
    texts = []
    for i in range(3_000):
        texts.append(f"[2026-11-29 09:40:20 TP{i % 8}] {warn}")
        texts.append(f"[2026-11-29 09:40:20 TP{i % 8}] ordinary line {i}")
    lines = lines_of(texts)
    builder = EventBuilder()
    index = LineIndex()
    for start in range(0, len(lines), 500):
        batch = lines[start : start + 500]
        index.append(batch)
        index.add_events([ev for line in batch for ev in builder.feed(line)])
    warned = [r for r in range(index.rows) if index.flags(r) & KIND_MASK == WARNING]
    assert warned == list(range(0, 6_000, 2))
    assert len(index.targets) == 3_000
    assert not any(index.flags(r) & ERRORISH for r in range(1, 6_000, 2))


def test_numbering_that_starts_over_stops_the_batch_at_the_new_generation() -> None:
    index = LineIndex()
    index.append(lines_of(["a", "b", "c"]))
    r = index.append(lines_of(["d"], start_no=4, start_offset=6) + lines_of(["new 1", "new 2"]))
    assert r.restart_at == 1 and r.added == 1
    assert index.rows == 4 and index.text(3) == "d"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet="abAB \t\x1b[m\x00ü", max_size=12), min_size=1, max_size=30),
    st.text(alphabet="abAB ü", min_size=1, max_size=3),
    st.integers(min_value=0, max_value=40),
    st.booleans(),
    st.integers(min_value=1, max_value=30),
    st.integers(min_value=1, max_value=16),
)
def test_find_agrees_with_a_line_by_line_search(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], needle: str, start: int, forward: bool,
    ring: int, chunk: int,
) -> None:
    import symmtui.ui.widgets.log_index as log_index
    from symmtui.core.decode import strip_ansi

    path = tmp_path_factory.mktemp("find") / "f.log"
    data = b""
    lines = []
    for no, text in enumerate(texts, 1):
        shown = text.replace("\x00", "")  # the follower drops NUL bytes from text and plain
        lines.append(LogLine(no, len(data), shown, strip_ansi(shown)))
        data += text.encode() + b"\n"
    path.write_bytes(data)
    index = LineIndex(ring=ring, max_rows=max(ring, 40))
    index.set_file(path)
    index.append(lines)
    index.scan_yield_bytes = 5
    n = len(texts)
    start = min(start, n - 1)
    order = list(range(start, n)) + list(range(0, start)) if forward else \
        list(range(start, -1, -1)) + list(range(n - 1, start, -1))
    if needle == needle.lower():  # smart case
        want = next((r for r in order if needle in lines[r].plain.lower()), None)
    else:
        want = next((r for r in order if needle in lines[r].plain), None)
    saved = log_index._SCAN_CHUNK
    log_index._SCAN_CHUNK = chunk
    try:
        assert index.find(needle, start, forward=forward) == want
    finally:
        log_index._SCAN_CHUNK = saved
        index.close_file()


def test_texts_reads_rows_out_of_memory_in_chunks_as_text_does(tmp_path: Path) -> None:
    import symmtui.ui.widgets.log_index as log_index

    path = tmp_path / "t.log"
    texts = [f"row {i} " + "x" * (i % 50) for i in range(3_000)]
    texts[5] = "\x1b[31mred\x1b[0m"
    texts[2_000] = "y" * 3_000  # longer than the chunk below
    index = LineIndex(ring=100)
    index.set_file(path)
    index.append(write_log(path, texts))
    saved = log_index._SCAN_CHUNK
    log_index._SCAN_CHUNK = 1024
    try:
        got = list(index.texts(index.base, index.end))
    finally:
        log_index._SCAN_CHUNK = saved
    assert [r for r, _ in got] == list(range(3_000))
    assert [t for _, t in got] == [index.text(r) for r in range(3_000)]
    assert got[5][1] == "red"
    index.close_file()
