"""Events: traceback blocks as one event, merged across ranks (also interleaved), prefixes, dialect, fuzz."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from symmtui.judge.events import FIRST_BATCH_MIN, MAX_BLOCK_LINES, Event, EventBuilder, split_prefix
from symmtui.judge.rules import Kind

from .engine_kit import KEYERROR_LOG, READY_LOG, lines_of


def _feed_all(text: str) -> tuple[EventBuilder, list[Event]]:
    b = EventBuilder()
    out: list[Event] = []
    for line in lines_of(text):
        out.extend(b.feed(line))
    out.extend(b.flush())
    return b, out


def _final(events: list[Event]) -> dict[str, Event]:
    """The last version of each keyed event (updates replace earlier ones)."""
    latest: dict[str, Event] = {}
    for e in events:
        latest[e.key] = e
    return latest


def test_keyerror_sample_is_one_event_with_eight_ranks() -> None:
    b, events = _feed_all(KEYERROR_LOG.read_text())
    crashes = [e for e in _final(events).values() if e.kind is Kind.CRASH]
    tb = [e for e in crashes if e.rule_id == "traceback"]
    assert len(tb) == 1
    ev = tb[0]
    assert ev.summary == "KeyError: 12 at torch_symm_mem.py:83"
    assert ev.ranks == frozenset(range(8)) and ev.count == 8
    assert ev.headline() == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)"
    assert ev.line_no == 10
    assert ev.block[0].endswith("Scheduler hit an exception: Traceback (most recent call last):")
    assert ev.block[-1] == "KeyError: 12" and len(ev.block) == 13
    assert ev.diagnosis == "sm120-symm-mem-keyerror"  # the frames name the symmetric-memory tables
    assert ev.ts is not None
    assert b.dialect == "sglang"
    # the parent's sigquit line is its own (secondary) crash event
    assert any(e.rule_id == "sglang-child-failed" and "wrapper" in e.roles for e in crashes)


def test_ready_sample_events_in_order() -> None:
    b, events = _feed_all(READY_LOG.read_text())
    kinds = [e.rule_id for e in events if e.kind is Kind.READY]
    assert kinds == ["sglang-ready"]  # the warm-up request's 200 is a phase of an SGLang log whose start is there
    # uvicorn's "Application startup complete." in an SGLang log is only the warm-up phase
    app = [e for e in events if e.rule_id == "uvicorn-startup-complete"]
    assert len(app) == 1 and app[0].kind is Kind.PHASE and app[0].phase == "warm-up"
    progress = [e.progress for e in events if e.kind is Kind.PROGRESS]
    assert progress[0] == (0, 83) and (83, 83) in progress and (21, 23) in progress
    assert not [e for e in events if e.kind is Kind.CRASH]


def test_application_startup_complete_is_ready_outside_sglang() -> None:
    vllm = "(APIServer pid=7) INFO 10-29 06:48:05 [api_server.py:1] vLLM API server version 0.11\nINFO:     Application startup complete.\n"
    _, events = _feed_all(vllm)
    assert [e.kind for e in events if e.rule_id == "uvicorn-startup-complete"] == [Kind.READY]
    _, events = _feed_all("INFO:     Application startup complete.\n")
    assert [e.kind for e in events] == [Kind.READY]


def _tb(exc: str = "KeyError: 12", frame_line: int = 83) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/x/scheduler.py", line 2714, in run_scheduler_process',
        "    scheduler = Scheduler(",
        f'  File "/x/sglang/srt/distributed/device_communicators/torch_symm_mem.py", line {frame_line}, in __init__',
        "    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]",
        "           ~~~~~~~~~~~~~~^^^^^^",
        exc,
    ]


def _prefixed(rank: int, body: list[str], style: str) -> list[str]:
    if style == "torchrun":
        return [f"[rank{rank}]: {ln}" for ln in body]
    return [f"(Worker_TP{rank} pid={100 + rank}) ERROR 10-29 06:48:05 [multiproc_executor.py:1] {ln}" for ln in body]


def _interleave(blocks: list[list[str]], rng: random.Random) -> list[str]:
    idx = [0] * len(blocks)
    out: list[str] = []
    while any(i < len(b) for i, b in zip(idx, blocks, strict=True)):
        k = rng.choice([j for j, b in enumerate(blocks) if idx[j] < len(b)])
        out.append(blocks[k][idx[k]])
        idx[k] += 1
    return out


def _crash_summary(lines: list[str]) -> dict[str, tuple[int, frozenset[int]]]:
    _, events = _feed_all("\n".join(lines) + "\n")
    return {e.summary: (e.count, e.ranks) for e in _final(events).values() if e.kind is Kind.CRASH}


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=0, max_value=2**32),
    st.sampled_from(["torchrun", "vllm"]),
    st.booleans(),
)
def test_grouping_is_invariant_under_rank_interleaving(n: int, seed: int, style: str, mixed: bool) -> None:
    rng = random.Random(seed)
    blocks = []
    for r in range(n):
        exc = "KeyError: 12" if not mixed or r % 2 == 0 else "RuntimeError: NCCL error: unhandled system error"
        blocks.append(_prefixed(r, _tb(exc, 83 if r % 2 == 0 or not mixed else 90), style))
    sequential = _crash_summary([ln for b in blocks for ln in b])
    interleaved = _crash_summary(_interleave(blocks, rng))
    assert interleaved == sequential
    total = sum(c for c, _ in sequential.values())
    assert total == n
    assert frozenset().union(*(r for _, r in sequential.values())) == frozenset(range(n))


def test_identical_unprefixed_blocks_interleaved_line_by_line() -> None:
    """SGLang style: the header carries the rank, the frames do not; 8 ranks printing in lockstep."""
    blocks = []
    for r in range(8):
        body = _tb()
        blocks.append([f"[2026-11-29 09:40:17 TP{r}] Scheduler hit an exception: {body[0]}", *body[1:]])
    lockstep = [blocks[r][i] for i in range(len(blocks[0])) for r in range(8)]
    got = _crash_summary(lockstep)
    assert got == {"KeyError: 12 at torch_symm_mem.py:83": (8, frozenset(range(8)))}


def test_other_lines_between_blocks_do_not_break_grouping() -> None:
    body = _tb()
    lines = [
        f"[2026-11-29 09:40:17 TP0] Scheduler hit an exception: {body[0]}",
        *body[1:4],
        "[2026-11-29 09:40:17 TP5] Load weight begin. avail mem=93.21 GB",
        *body[4:],
        "",
        "[2026-11-29 09:40:18] Received sigquit from a child process. It usually means the child failed.",
    ]
    got = _crash_summary(lines)
    assert got["KeyError: 12 at torch_symm_mem.py:83"] == (1, frozenset({0}))
    assert "Received sigquit from a child process. It usually means the child failed." in got


def test_traceback_without_exception_line_is_flushed() -> None:
    b = EventBuilder()
    events: list[Event] = []
    for line in lines_of("Traceback (most recent call last):\n  File \"/a/b.py\", line 3, in f\n    g()\n"):
        events.extend(b.feed(line))
    assert events == [] and b.in_block
    events = b.flush()
    assert len(events) == 1 and events[0].summary == "Traceback with no exception line at b.py:3"
    assert not b.in_block


def test_quoted_traceback_header_is_not_a_block() -> None:
    _, events = _feed_all('Traceback (most recent call last):\nINFO: server continues\n')
    assert [e for e in events if e.kind is Kind.CRASH] == []


def test_huge_traceback_is_bounded() -> None:
    lines = ["Traceback (most recent call last):"] + [f'  File "/a/m{i}.py", line {i}, in f' for i in range(5 * MAX_BLOCK_LINES)]
    b = EventBuilder()
    events: list[Event] = []
    for line in lines_of("\n".join(lines)):
        events.extend(b.feed(line))
    assert events and len(events[0].block) <= MAX_BLOCK_LINES + 1


def test_same_warning_from_eight_ranks_is_one_event() -> None:
    text = "\n".join(
        f"[2026-11-29 09:40:12 TP{r}] TorchSymmMemCommunicator: Device capability 12 not supported, communicator is not available."
        for r in range(8)
    )
    _, events = _feed_all(text)
    final = list(_final(events).values())
    assert len(final) == 1 and final[0].kind is Kind.WARNING
    assert final[0].count == 8 and final[0].ranks == frozenset(range(8))
    assert final[0].diagnosis == "symm-mem-capability-unsupported"


def test_split_prefix_shapes() -> None:
    p = split_prefix("[2026-11-29 09:40:17 TP3] Load weight begin.")
    assert (p.key, p.rank, p.body, p.dialect) == ("TP3", 3, "Load weight begin.", "sglang")
    assert p.ts is not None and p.ts % 60 == 17
    p = split_prefix("[2026-11-29 09:40:17 DP1 TP3 EP3] x")
    assert p.rank == 3 and p.key == "DP1 TP3 EP3"
    p = split_prefix("[2026-11-29 09:40:17] INFO:     Started server process [1]")
    assert p.key is None and p.rank is None and p.body.startswith("INFO:")
    p = split_prefix("[rank5]:   File \"x.py\", line 1, in f")
    assert (p.key, p.rank, p.body) == ("rank5", 5, '  File "x.py", line 1, in f')
    p = split_prefix("(VllmWorkerProcess pid=77) ERROR 10-29 06:48:05 [w.py:1]   File \"x.py\"")
    assert p.key == "pid77" and p.rank is None and p.body == '  File "x.py"' and p.dialect == "vllm"
    p = split_prefix("[2026-13-45 99:99:99 TP0] bad date")
    assert p.ts is None and p.rank == 0
    assert split_prefix("plain text").body == "plain text"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.sampled_from(["Traceback (most recent call last):", '  File "a.py", line 1, in f', "KeyError: 1", "",
                     "[rank1]: Traceback (most recent call last):", "[2026-11-29 09:40:17 TP1] x", "    code",
                     "[2026-11-29 09:40:17 TP2] Scheduler hit an exception:"]),
), max_size=60))
def test_builder_never_raises_and_closes_everything(lines: list[str]) -> None:
    b = EventBuilder()
    for i, text in enumerate(lines, 1):
        for piece in text.splitlines() or [""]:
            for ev in b.feed_plain(i, piece):
                assert ev.count >= 1 and ev.summary
    b.flush()
    assert not b.in_block


_LINE_POOL = [
    *KEYERROR_LOG.read_text().splitlines()[8:25],
    *READY_LOG.read_text().splitlines()[-12:],
    "[rank2]: Traceback (most recent call last):", '[rank2]:   File "a.py", line 4, in f', "[rank2]: KeyError: 3",
    "Decode batch. #running-req: 3", "", "Killed", "KeyError: 9",
    "[2026-11-29 09:40:17 TP5] Scheduler hit an exception:", "Traceback (most recent call last):",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_LINE_POOL) | st.text(max_size=40).map(lambda t: t.replace("\n", " ").replace("\r", " ")),
                max_size=400),
       st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=10), st.booleans())
def test_feed_many_equals_feeding_line_by_line(texts: list[str], cuts: list[int], hinted: bool) -> None:
    """``hinted``: each chunk says it is part of a long batch (the engine's ``part_of``), so a short first chunk
    is prefiltered too instead of judged line by line."""
    lines = lines_of("\n".join(texts)) if texts else []
    one = EventBuilder()
    expected = [e for ln in lines for e in one.feed(ln)] + one.flush()
    many = EventBuilder()
    got: list[Event] = []
    pos = 0
    for size in cuts * 50:
        if pos >= len(lines):
            break
        got.extend(many.feed_many(lines[pos : pos + size * 3], part_of=FIRST_BATCH_MIN if hinted else 0))
        pos += size * 3
    got.extend(many.feed_many(lines[pos:]))
    got.extend(many.flush())
    # Updates of an event seen before come once a batch (a repeat is counted, not rebuilt): the same events in the
    # same order of first appearance, each key's last version the same.
    assert _first_and_last(got) == _first_and_last(expected)


def _first_and_last(events: list[Event]) -> tuple[list[str], dict[str, Event]]:
    order: dict[str, None] = {}
    last: dict[str, Event] = {}
    for e in events:
        order.setdefault(e.key, None)
        last[e.key] = e
    return list(order), last


def test_announced_traceback_on_the_next_line_is_one_event_with_the_rank() -> None:
    text = (
        "[2026-11-29 09:40:17 TP3] Scheduler hit an exception:\n"
        "Traceback (most recent call last):\n"
        '  File "/x/torch_symm_mem.py", line 83, in __init__\n'
        "    x\n"
        "KeyError: 12\n"
        "[2026-11-29 09:40:17 TP4] Scheduler hit an exception:\n"
        "[2026-11-29 09:40:18] Received sigquit from a child process.\n"
    )
    _, events = _feed_all(text)
    assert [(e.rule_id, e.headline(), e.line_no) for e in events] == [
        ("traceback", "KeyError: 12 at torch_symm_mem.py:83 (rank 3)", 1),
        ("hit-exception", "Scheduler hit an exception: (rank 4)", 6),
        ("sglang-child-failed", "Received sigquit from a child process.", 7),
    ]
    assert events[0].block[0].endswith("Scheduler hit an exception:") and len(events[0].block) == 5


def test_events_carry_the_byte_offsets_of_their_lines_in_the_file(tmp_path) -> None:
    """Each event and each occurrence span carries the file's byte offsets of its first and last line (the log
    pane places rows by them), read through the real follower's lines, in one batch and line by line."""
    from symmtui.logs.follow import iter_lines

    log = tmp_path / "x.log"
    filler = "".join(f"[2026-12-01 10:00:00 TP0] step {i} ünïcode\n" for i in range(200))
    log.write_bytes(filler.encode() + KEYERROR_LOG.read_bytes())
    data = log.read_bytes()
    lines = [ln for batch in iter_lines(log) for ln in batch]
    starts = {ln.no: ln.offset for ln in lines}
    for feed in ("many", "one"):
        b = EventBuilder()
        evs = (b.feed_many(lines) if feed == "many" else [e for ln in lines for e in b.feed(ln)]) + b.flush()
        crash = next(e for e in evs[::-1] if e.summary.startswith("KeyError: 12"))
        assert crash.offset == starts[crash.line_no]
        assert data[crash.offset:].startswith(crash.text.encode())
        assert len(crash.offsets) == len(crash.spans) == 8
        for (first, last), (a, z) in zip(crash.spans, crash.offsets, strict=True):
            assert (starts[first], starts[last]) == (a, z)
        assert all(e.offset == starts[e.line_no] for e in evs)


def test_events_of_lines_without_offsets_say_unknown() -> None:
    b = EventBuilder()
    ev = (b.feed_plain(1, "ValueError: boom") + b.flush())[0]
    assert ev.offset == -1 and ev.offsets == ((-1, -1),)
