"""LogFollower.watch() on inotify with a real writer process: delivery, waiting, rotation, stop."""

from __future__ import annotations

import os
import shutil
import statistics
import threading
from pathlib import Path

from symmtui.logs.follow import FileNotice, LogFollower, LogItem, LogLine
from tests.core.follow_kit import WAIT, Collector, Writer, finish_flood, start_flood


def test_lines_from_a_writer_process_arrive_event_driven(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        assert c.wait_notice("opened")
        written: list[float] = []
        for i in range(20):
            written.append(w.write(f"[TP0] step {i}\n"))
            assert c.wait_text(f"[TP0] step {i}")
        texts = c.texts()
        times = {item.text: t for item, t in zip(c.items, c.times, strict=True) if isinstance(item, LogLine)}
    assert texts == [f"[TP0] step {i}" for i in range(20)]
    delays = [times[f"[TP0] step {i}"] - written[i] for i in range(20)]
    assert all(d >= 0 for d in delays)
    # Recorded for the reader; the figure with a baseline lives in bench/follow.py.
    print(f"append->on_batch median {statistics.median(delays) * 1000:.1f} ms")


def test_half_line_from_writer_waits_for_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        assert c.wait_notice("opened")
        w.write("Load weight begin.")
        w.write(" avail mem=93.21 GB")
        w.write("\nsecond\n")
        assert c.wait_text("second")
    assert c.texts() == ["Load weight begin. avail mem=93.21 GB", "second"]


def test_waits_for_missing_directory_tree(tmp_path: Path) -> None:
    log = tmp_path / "runs" / "today" / "server.log"
    with Collector(LogFollower(log)) as c:
        assert c.wait_notice("waiting")
        (tmp_path / "runs").mkdir()
        (tmp_path / "runs" / "today").mkdir()
        with Writer(log) as w:
            w.write("hello\n")
            assert c.wait_text("hello")
        assert c.kinds() == ["waiting", "opened"]


def test_stop_ends_watch_promptly_even_while_waiting(tmp_path: Path) -> None:
    c = Collector(LogFollower(tmp_path / "nowhere" / "x.log"))
    with c:
        assert c.wait_notice("waiting")
    assert not c.thread.is_alive()


def test_rotation_by_writer_loses_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Writer(log) as w, Collector(LogFollower(log)) as c:
        w.write("gen1 a\ngen1 b\n")
        assert c.wait_text("gen1 b")
        w.do("rename", to=str(tmp_path / "server.log.1"))
        w.write("gen1 c (after rename, old fd)\n")
        w.do("reopen")
        w.write("gen2 a\n")
        assert c.wait_text("gen2 a")
        lines = [i for i in c.items if isinstance(i, LogLine) and not i.progress]
    # The line written to the renamed file may be read before or after the rename is noticed;
    # either way it comes exactly once and before the new file's lines.
    assert [x.text for x in lines] == ["gen1 a", "gen1 b", "gen1 c (after rename, old fd)", "gen2 a"]
    assert [x.no for x in lines] == [1, 2, 3, 1]
    assert c.kinds()[-3:] == ["opened", "rotated", "opened"]


def test_flood_with_rotations_counts_every_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    seen: list[int] = []
    bad: list[str] = []
    done = threading.Event()
    rotations = 0
    lock = threading.Lock()

    def on_batch(items: list[LogItem]) -> None:
        nonlocal rotations
        with lock:
            for it in items:
                if isinstance(it, LogLine):
                    if it.text.startswith("seq="):
                        seen.append(int(it.text[4:13]))
                        if seen[-1] % every == 0 and 0 < seen[-1] < total - every:
                            with ack.open("ab") as fh:  # the new file is open: the writer may rotate again
                                fh.write(b".")
                    else:
                        bad.append(it.text)
                elif it.kind == "rotated":
                    rotations += 1
            if seen and seen[-1] == total - 1:
                done.set()

    follower = LogFollower(log)
    stop = threading.Event()
    t = threading.Thread(target=follower.watch, args=(stop, on_batch))
    total, every = 20_000, 3_000
    # A follower starved past a whole generation (a loaded machine) could not find it at the path: the
    # writer waits for the reader's ack of each new file before it renames the next one away.
    ack = tmp_path / "ack"
    t.start()
    try:
        proc = start_flood(log, rate=20_000, seconds=1.0, rotate_every=every, rotate_ack=ack)
        report = finish_flood(proc, timeout=WAIT * 3)
        assert report["lines"] == total
        assert done.wait(WAIT)
    finally:
        stop.set()
        t.join(WAIT)
        follower.close()
    assert not t.is_alive()
    assert bad == []
    assert seen == list(range(total))  # none lost, none twice, in order
    assert rotations == report["rotations"] == 6


def test_directory_removed_and_recreated_while_watching(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    log = d / "server.log"
    log.write_text("before\n")
    with Collector(LogFollower(log)) as c:
        assert c.wait_text("before")
        shutil.rmtree(d)
        assert c.wait_notice("deleted")
        d.mkdir()
        log.write_text("after\n")
        assert c.wait_text("after")
    assert c.texts() == ["before", "after"]
    assert c.kinds() == ["opened", "deleted", "opened"]
    assert any("deleted" in n.message for n in c.items if isinstance(n, FileNotice))


def test_symlinked_log_follows_the_target(tmp_path: Path) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    (real_dir / "run1.log").write_text("")
    link = tmp_path / "latest.log"
    os.symlink(real_dir / "run1.log", link)
    with Collector(LogFollower(link)) as c, Writer(real_dir / "run1.log") as w:
        assert c.wait_notice("opened")
        w.write("through the link\n")  # the change happens in real/, not next to the link
        assert c.wait_text("through the link")


def test_log_directory_replaced_under_the_same_name(tmp_path: Path) -> None:
    """mv logs logs.old; mkdir logs: the old file is read to its end, then the new directory is watched."""
    d = tmp_path / "logs"
    d.mkdir()
    log = d / "server.log"
    log.write_text("old dir\n")
    with Collector(LogFollower(log), timeout_ms=60_000) as c:  # no safety-net poll: events only
        assert c.wait_text("old dir")
        os.rename(d, tmp_path / "logs.old")
        d.mkdir()
        assert c.wait_notice("rotated")
        log.write_text("new dir\n")
        assert c.wait_text("new dir")
    assert c.texts() == ["old dir", "new dir"]
