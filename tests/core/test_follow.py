"""LogFollower driven by poll(): lines, progress, decoding, tail start, backfill, rotation, truncation."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from symmtui.logs.decode import LogLine, clean_raw, cut_utf8, make_lines, strip_ansi
from symmtui.logs.follow import FileNotice, LogFollower, iter_lines, tail_offset
from tests.core.follow_kit import Collector, final_texts, notices

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures"


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def lines_of(items: list[object]) -> list[LogLine]:
    return [i for i in items if isinstance(i, LogLine)]


def test_missing_dir_then_file_then_lines(tmp_path: Path) -> None:
    log = tmp_path / "a" / "b" / "server.log"
    f = LogFollower(log)
    first = f.poll()
    assert [n.kind for n in first if isinstance(n, FileNotice)] == ["waiting"]
    assert "directory" in first[0].message and str(tmp_path / "a") in first[0].message
    assert f.poll() == []  # no repeated notice while still waiting
    log.parent.mkdir(parents=True)
    log.write_bytes(b"one\ntwo\n")
    items = f.poll()
    assert isinstance(items[0], FileNotice) and items[0].kind == "opened"
    assert [(x.no, x.offset, x.text) for x in lines_of(items)] == [(1, 0, "one"), (2, 4, "two")]


def test_half_written_line_waits_for_newline(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"")
    f = LogFollower(log)
    f.poll()
    append(log, b"Load weight be")
    assert f.poll() == []
    append(log, b"gin. avail mem=93.2 GB\nnext")
    got = lines_of(f.poll())
    assert [(x.no, x.offset, x.text) for x in got] == [(1, 0, "Load weight begin. avail mem=93.2 GB")]
    append(log, b"\n")
    assert [(x.no, x.offset, x.text) for x in lines_of(f.poll())] == [(2, 37, "next")]


def test_crlf_is_a_normal_line_even_split_between_cr_and_lf(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"a\r\nb\r")
    f = LogFollower(log)
    items = lines_of(f.poll())
    assert [(x.text, x.progress) for x in items] == [("a", False)]  # "b\r" may be half of CRLF
    append(log, b"\n")
    assert [(x.text, x.progress, x.offset) for x in lines_of(f.poll())] == [("b", False, 3)]


def test_tqdm_progress_updates_then_final_line(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"before\n")
    f = LogFollower(log)
    f.poll()
    append(log, b"\rLoading safetensors checkpoint shards:   0% Completed | 0/83")
    up1 = lines_of(f.poll())
    assert [(x.text, x.progress, x.no, x.offset) for x in up1] == [
        ("Loading safetensors checkpoint shards:   0% Completed | 0/83", True, 2, 7)
    ]
    assert f.poll() == []  # nothing new: the same update is not sent again
    append(log, b"\rLoading safetensors checkpoint shards:   1% Completed | 1/83")
    append(log, b"\rLoading safetensors checkpoint shards:   2% Completed | 2/83")
    up2 = lines_of(f.poll())
    assert [(x.text[-4:], x.progress, x.offset) for x in up2] == [("2/83", True, 7)]
    append(log, b"\rLoading safetensors checkpoint shards: 100% Completed | 83/83\nafter\n")
    done = lines_of(f.poll())
    assert [(x.text[-5:], x.progress, x.no, x.offset) for x in done] == [
        ("83/83", False, 2, 7),
        ("after", False, 3, done[1].offset),
    ]


def test_progress_written_with_trailing_cr(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"10%\r")
    f = LogFollower(log)
    assert lines_of(f.poll()) == []  # a lone trailing CR may be the start of CRLF
    append(log, b"20%\r")
    assert [(x.text, x.progress) for x in lines_of(f.poll())] == [("20%", True)]
    append(log, b"\n")
    assert [(x.text, x.progress) for x in lines_of(f.poll())] == [("20%", False)]


def test_ansi_kept_in_text_stripped_in_plain(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(
        b"\x1b[1;31mERROR\x1b[0m boom\n"
        b"\x1b]8;;http://x\x07link\x1b]8;;\x07\n"
        b"plain line\n"
    )
    got = lines_of(LogFollower(log).poll())
    assert got[0].text == "\x1b[1;31mERROR\x1b[0m boom" and got[0].plain == "ERROR boom"
    assert got[1].plain == "link"
    assert got[2].text == got[2].plain == "plain line"


def test_invalid_utf8_and_nul_never_raise(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"ok \xff\xfe end\n\x00\x00KeyError: 12\x00\n\xe2\x82\n")
    got = lines_of(LogFollower(log).poll())
    assert got[0].text == "ok \ufffd\ufffd end"
    assert got[1].text == got[1].plain == "KeyError: 12"
    assert got[2].text == "\ufffd"
    assert [x.offset for x in got] == [0, 10, 26]


def test_line_over_cap_is_truncated_and_rest_discarded(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"")
    f = LogFollower(log, max_line_bytes=100)
    f.poll()
    for _ in range(50):  # 50 x 1000 bytes without a newline, streamed
        append(log, b"y" * 1000)
        assert lines_of(f.poll()) == []
    append(log, b"\nshort\n")
    got = lines_of(f.poll())
    assert [(len(x.text), x.truncated) for x in got] == [(100, True), (5, False)]
    assert got[1].offset == 50_001 and got[1].no == 2


def test_cap_does_not_split_a_utf8_character() -> None:
    raw = "é".encode() * 10  # 2 bytes each
    assert cut_utf8(raw, 5) == "éé".encode()
    visible, truncated = clean_raw(raw, 5)
    assert truncated and visible.decode() == "éé"


def test_make_lines_fast_and_slow_paths_agree() -> None:
    chunk = b"alpha\n\x1b[32mgreen\x1b[0m\n\xc3\xa9t\xc3\xa9\n\nlast"
    fast: list[LogLine] = []
    assert make_lines(chunk, 5, 100, 1000, fast) == 5
    slow: list[LogLine] = []
    make_lines(chunk + b"\n\x00x", 5, 100, 1000, slow)  # the NUL forces the per-line path
    assert slow[:5] == fast
    assert [x.offset for x in fast] == [100, 106, 121, 127, 128]
    assert fast[1].plain == "green" and fast[2].text == "été"
    assert strip_ansi("\x1b[0m") == ""


def test_tail_starts_at_last_n_lines_with_exact_numbers(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with open(log, "wb") as fh:
        for i in range(1, 200_001):
            fh.write(b"line %d\n" % i)
    f = LogFollower(log, tail_lines=3)
    items = f.poll()
    assert "line 199998" in items[0].message  # type: ignore[union-attr]
    assert [(x.no, x.text) for x in lines_of(items)] == [
        (199_998, "line 199998"), (199_999, "line 199999"), (200_000, "line 200000")
    ]
    assert f.numbering_exact
    # The skipped part, exactly numbered, in bounded batches.
    seen = 0
    for batch in f.backfill(batch_bytes=64 << 10):
        assert len(batch) < 20_000
        assert batch[0].no == seen + 1
        seen += len(batch)
    assert seen == 199_997
    f.close()


def test_tail_attach_to_a_big_log_does_not_read_it_into_memory(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    block = b"".join(b"[TP%d] Decode batch. #running-req: 1, #token: 40\n" % (i % 8) for i in range(20_000))
    with open(log, "wb") as fh:
        for _ in range(40):  # ~40 MB
            fh.write(block)
    tracemalloc.start()
    try:
        f = LogFollower(log, tail_lines=5)
        got = lines_of(f.poll())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        f.close()
    assert [x.no for x in got] == list(range(799_996, 800_001))
    assert peak < 4 << 20, f"attach peaked at {peak / 1e6:.1f} MB for a {log.stat().st_size / 1e6:.0f} MB log"


def test_tail_without_counting_gives_relative_numbers(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(b"".join(b"l%d\n" % i for i in range(1000)))
    f = LogFollower(log, tail_lines=2, count_limit=10)
    got = lines_of(f.poll())
    assert [(x.no, x.text) for x in got] == [(1, "l998"), (2, "l999")]
    assert not f.numbering_exact
    assert sum(len(b) for b in f.backfill()) == 998
    f.close()


def test_tail_offset_edge_cases(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    for data, n, want in [
        (b"", 5, 0),
        (b"a\nb\nc\n", 2, 2),
        (b"a\nb\nc\n", 0, 6),
        (b"a\nb\nc", 1, 2),  # the unterminated "c" is always included
        (b"a\nb\nc", 0, 4),
        (b"a\nb\n", 10, 0),
    ]:
        log.write_bytes(data)
        fd = os.open(log, os.O_RDONLY)
        try:
            assert tail_offset(fd, len(data), n, block=2) == want, (data, n)
        finally:
            os.close(fd)


def test_tail_zero_follows_only_new_lines(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"old 1\nold 2\npart")
    f = LogFollower(log, tail_lines=0)
    assert lines_of(f.poll()) == []
    append(log, b"ial\nnew\n")
    assert final_texts(f.poll()) == ["partial", "new"]


def test_file_created_after_attach_is_read_from_start_despite_tail(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    f = LogFollower(log, tail_lines=0)
    f.poll()
    log.write_bytes(b"first\nsecond\n")
    assert final_texts(f.poll()) == ["first", "second"]


def test_rotation_drains_old_file_then_switches(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"a\nb\n")
    f = LogFollower(log)
    f.poll()
    with open(log, "ab") as old:
        os.rename(log, tmp_path / "s.log.1")
        old.write(b"c (written after rename)\nunterminated")
    log.write_bytes(b"new 1\n")
    items = f.poll()
    assert final_texts(items) == ["c (written after rename)", "unterminated", "new 1"]
    kinds = [i.kind for i in items if isinstance(i, FileNotice)]
    assert kinds == ["rotated", "opened"]
    assert [x.no for x in lines_of(items)] == [3, 4, 1]


def test_delete_then_recreate(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"a\n")
    f = LogFollower(log)
    f.poll()
    append(log, b"b\n")
    log.unlink()
    items = f.poll()
    assert final_texts(items) == ["b"]
    assert [n.kind for n in notices(items, "deleted")] == ["deleted"]
    assert f.poll() == []
    log.write_bytes(b"again\n")
    items = f.poll()
    assert [i.kind for i in items if isinstance(i, FileNotice)] == ["opened"]
    assert [(x.no, x.text) for x in lines_of(items)] == [(1, "again")]


def test_truncation_restarts_numbering(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"a\nb\nc\n")
    f = LogFollower(log)
    f.poll()
    os.truncate(log, 0)
    append(log, b"x\n")
    items = f.poll()
    assert [i.kind for i in items if isinstance(i, FileNotice)] == ["truncated"]
    assert [(x.no, x.offset, x.text) for x in lines_of(items)] == [(1, 0, "x")]


def test_truncate_and_regrow_past_offset_is_noticed(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"first run line 1\nfirst run line 2\n")
    f = LogFollower(log)
    f.poll()
    # Relaunch with `> log` and more output than before, all between two polls.
    log.write_bytes(b"second run says hello\nsecond run line 2\nand 3\n")
    items = f.poll()
    assert [i.kind for i in items if isinstance(i, FileNotice)] == ["truncated"]
    assert final_texts(items) == ["second run says hello", "second run line 2", "and 3"]


def test_copytruncate_with_non_append_writer_skips_the_nul_hole(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT, 0o644)  # no O_APPEND, like a careless server
    try:
        os.write(fd, b"x" * 5000 + b"\n")
        f = LogFollower(log, max_line_bytes=1000)
        f.poll()
        os.truncate(log, 0)  # logrotate copytruncate
        os.write(fd, b"after rotate\n")  # lands at offset 5001: the file starts with a hole of NULs
    finally:
        os.close(fd)
    items = f.poll()
    assert [i.kind for i in items if isinstance(i, FileNotice)] == ["truncated"]
    assert [(x.text, x.truncated) for x in lines_of(items)] == [("after rotate", False)]


def test_path_becomes_a_directory_is_an_error_then_recovers(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.mkdir()
    f = LogFollower(log)
    items = f.poll()
    assert [n.kind for n in items if isinstance(n, FileNotice)] == ["error"]
    assert "is a directory" in items[0].message  # type: ignore[union-attr]
    assert f.poll() == []  # the same error is said once
    log.rmdir()
    log.write_bytes(b"ok\n")
    items = f.poll()
    assert [n.kind for n in items if isinstance(n, FileNotice)] == ["opened"]
    assert final_texts(items) == ["ok"]


def test_big_backlog_comes_in_bounded_batches(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"".join(b"row %06d\n" % i for i in range(100_000)))
    f = LogFollower(log, batch_bytes=100_000)
    total = 0
    polls = 0
    while True:
        batch = lines_of(f.poll())
        polls += 1
        assert len(batch) <= 100_000 // 11 + 2
        total += len(batch)
        if not f.has_more:
            break
    assert total == 100_000 and polls >= 10


def test_iter_lines_whole_file_including_unterminated_last(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"a\n\rp1\rp2\nlast")
    got = [x for batch in iter_lines(log) for x in batch]
    assert [(x.no, x.text, x.progress) for x in got] == [(1, "a", False), (2, "p2", False), (3, "last", False)]


def test_shared_samples_read_whole(tmp_path: Path) -> None:
    sample = SAMPLES / "sglang-tp8-symm-mem-keyerror.log"
    raw = sample.read_bytes()
    got = [x for batch in iter_lines(sample) for x in batch]
    assert len(got) == raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    assert any("KeyError: 12" in x.plain for x in got)
    assert all(raw[x.offset : x.offset + len(x.text.encode())] == x.text.encode() for x in got)


def test_a_file_where_the_directory_should_be(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("oops, a file")
    f = LogFollower(tmp_path / "logs" / "server.log")
    items = f.poll()
    assert [n.kind for n in items if isinstance(n, FileNotice)] == ["error"]
    assert f"{tmp_path / 'logs'} is a file, not a directory" in items[0].message  # type: ignore[union-attr]
    (tmp_path / "logs").unlink()
    assert [n.kind for n in f.poll() if isinstance(n, FileNotice)] == ["waiting"]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "server.log").write_text("x\n")
    assert final_texts(f.poll()) == ["x"]


def test_watch_without_inotify_falls_back_to_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """inotify refused (e.g. fs.inotify.max_user_instances reached: inotify_init1 fails with EMFILE, which this
    machine can only be made to do for every user at once, so it is refused here at libc's door): lines still
    arrive, by timer."""
    from symmtui.logs import inotify

    def refused(*args: object) -> None:
        raise OSError(24, "inotify_init1: Too many open files")

    monkeypatch.setattr(inotify, "open_watch", refused)
    log = tmp_path / "s.log"
    with Collector(LogFollower(log)) as c:
        assert c.wait_notice("waiting")
        log.write_text("polled\n")
        assert c.wait_text("polled")


def test_watch_through_watchfiles_where_libc_has_no_inotify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where libc has no inotify (macOS) the follower watches through watchfiles' RustNotify: the real one here
    (inotify underneath, through its Rust crate), with the libc check answering no."""
    from symmtui.logs import inotify

    monkeypatch.setattr(inotify, "available", lambda: False)
    made: list[object] = []
    real = inotify.RustWatch

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object) -> None:
            super().__init__(*args)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr(inotify, "RustWatch", Counted)
    log = tmp_path / "s.log"
    log.write_text("first\n")
    with Collector(LogFollower(log)) as c:
        assert c.wait_text("first")
        append(log, b"second\n")
        assert c.wait_text("second")
    assert made, "the follower did not watch through watchfiles"


def test_close_stops_everything(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_bytes(b"a\n")
    f = LogFollower(log, tail_lines=0)
    f.poll()
    f.close()
    append(log, b"b\n")
    assert f.poll() == []  # a watch thread that polls once more after close() must not reopen
    assert list(f.backfill()) == []
    f.close()  # twice is fine


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="tail_lines"):
        LogFollower("x", tail_lines=-1)
    with pytest.raises(ValueError, match="max_line_bytes"):
        LogFollower("x", max_line_bytes=0)
