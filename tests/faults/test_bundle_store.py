"""The bundle store, with real `wait` processes: no two runs share a file (8 at once on one log), bounded
retention (20 per log, 200 MB in all, oldest first; `wait --url` runs too), the path printed under the
verdict, `--bundle PATH`, and `report` with no argument taking the newest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from symmtui.bundle import store
from symmtui.bundle.format import SUFFIX, read_bundle
from tests.faults.hostile_kit import ROOT, one_error_line, run_cli
from tests.launch.helpers import free_port

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PARALLEL = 8


def _log(tmp_path: Path, fixture: str = "sglang-tp8-symm-mem-keyerror.log", name: str = "server.log") -> Path:
    log = tmp_path / name
    shutil.copy(FIXTURES / fixture, log)
    return log


def _printed(stderr: str) -> Path:
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("symmtui: bundle: ")]
    return Path(line.removeprefix("symmtui: bundle: ").rsplit(" (", 1)[0])


def test_eight_parallel_waits_on_one_log_keep_every_bundle(tmp_path: Path) -> None:
    """Two rounds of 8 real `wait` processes started together on one log (most in the same second): 16
    files, each its own run's, each complete. (With a free-name check they overwrote each other: 1-4 of
    24 lost.)"""
    log = _log(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    printed: list[Path] = []
    for _round in range(2):
        procs = [subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--timeout", "30"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(PARALLEL)]
        for proc in procs:
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode == 1, err
            printed.append(_printed(err))
    files = sorted(store.store_dir().glob(f"*{SUFFIX}"))
    assert len(set(printed)) == 2 * PARALLEL and sorted(printed) == files, (printed, files)
    starts = set()
    for path in files:
        bundle = read_bundle(path)
        assert bundle.data["final"] is True and bundle.final is not None and bundle.final["state"] == "crashed"
        assert path.stat().st_mode & 0o077 == 0
        starts.add(bundle.data["started_at"])
    assert len(starts) == 2 * PARALLEL  # sixteen runs, not one run's file sixteen times


def _fake(folder: Path, stem: str, n: int, *, size: int = 10, start: float = 1_000_000_000.0) -> list[Path]:
    """``n`` bundle-named files of ``stem``, oldest first (their mtimes one second apart)."""
    made = []
    for i in range(n):
        path = folder / f"{stem}.20200101-0000{i % 60:02d}-{i + 2}{SUFFIX}"
        path.write_bytes(b"x" * size)
        os.utime(path, (start + i, start + i))
        made.append(path)
    return made


def test_a_wait_keeps_the_last_twenty_of_its_log_and_leaves_other_logs_alone(tmp_path: Path) -> None:
    log = _log(tmp_path)
    folder = store.store_dir()
    old = _fake(folder, store.stem(log, ""), 25)
    other = _fake(folder, store.stem(tmp_path / "other.log", ""), 3)
    r = run_cli("wait", "--log", str(log), "--timeout", "30", timeout=60)
    assert r.returncode == 1, r.stderr
    mine = _printed(r.stderr.decode())
    left = {p for p in folder.glob(f"*{SUFFIX}")}
    assert mine in left and set(other) <= left
    assert left - set(other) == {mine, *old[-19:]}  # the newest 20 of this log: 19 older and this run's


def test_wait_url_runs_are_pruned_too(tmp_path: Path) -> None:
    """`wait --url` has no log: its bundles are named after the session, and kept 20 like any log's."""
    folder = store.store_dir()
    url = f"http://127.0.0.1:{free_port()}/health"  # nothing listens: still starting, then TIMED OUT
    r = run_cli("wait", "--url", url, "--timeout", "1", timeout=60)
    assert r.returncode == 124, r.stderr
    first = _printed(r.stderr.decode())
    stem = first.name.split(".")[0]
    old = _fake(folder, stem, 22)  # older than the first run's
    r = run_cli("wait", "--url", url, "--timeout", "1", timeout=60)
    second = _printed(r.stderr.decode())
    left = set(folder.glob(f"*{SUFFIX}"))
    assert left == {first, second, *old[-18:]}  # 24 of one name, the newest 20 kept


def test_the_store_stays_under_its_total_removing_the_oldest_first(tmp_path: Path) -> None:
    folder = tmp_path / "bundles"
    folder.mkdir()
    a = _fake(folder, "a.log-11111111", 4, size=100)
    b = _fake(folder, "b.log-22222222", 4, size=100, start=1_000_000_002.5)  # interleaved with a's in time
    demo = folder / f"demo-crash{SUFFIX}"  # a fixed name (the demo's): counted, and oldest of all
    demo.write_bytes(b"d" * 100)
    os.utime(demo, (1.0, 1.0))
    removed = store.prune(folder, total=450)
    left = set(folder.glob(f"*{SUFFIX}"))
    assert len(left) == 4 and sum(p.stat().st_size for p in left) <= 450
    assert left == {a[3], b[1], b[2], b[3]} and demo in removed  # mtimes ...3, 3.5, 4.5, 5.5: the newest four
    assert store.prune(folder, total=450) == []  # nothing more to do


def test_a_bundle_reserved_but_not_yet_written_is_never_the_newest(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    full = store.place(b"data", "x.log-00000000", time.time(), folder)
    empty = folder / f"x.log-00000000.20991231-235959{SUFFIX}"
    empty.write_bytes(b"")  # another run's O_EXCL reservation, a moment before its rename
    assert store.newest(folder) == full


def test_report_without_an_argument_takes_the_newest(tmp_path: Path) -> None:
    crashed = run_cli("wait", "--log", str(_log(tmp_path, name="a.log")), "--timeout", "30", timeout=60)
    ready = run_cli("wait", "--log", str(_log(tmp_path, "sglang-tp8-ready.log", "b.log")), "--timeout", "30", timeout=60)
    assert (crashed.returncode, ready.returncode) == (1, 0)
    now = time.time()
    os.utime(_printed(ready.stderr.decode()), (now - 60, now - 60))
    os.utime(_printed(crashed.stderr.decode()), (now, now))  # the crash's bundle written last
    r = run_cli("report", timeout=60)
    assert r.returncode == 0 and r.stdout.decode().startswith("## symmtui report: CRASHED"), (r.stdout[:300], r.stderr)


def test_report_with_nothing_recorded_says_what_to_do() -> None:
    line = one_error_line(run_cli("report", timeout=60))
    assert "no bundle" in line and "symmtui wait" in line


def test_bundle_path_writes_beside_the_log_and_nothing_in_the_store(tmp_path: Path) -> None:
    log = _log(tmp_path)
    beside = tmp_path / f"server.log{SUFFIX}"
    for _run in range(2):  # the user's own path: the second run replaces the first's file
        r = run_cli("wait", "--log", str(log), "--timeout", "30", "--bundle", str(beside), timeout=60)
        assert r.returncode == 1 and _printed(r.stderr.decode()) == beside, r.stderr
    assert read_bundle(beside).final is not None and not list(store.store_dir().glob(f"*{SUFFIX}"))
    line = one_error_line(run_cli("wait", "--log", str(log), "--bundle", str(beside), "--no-record", timeout=60))
    assert "--bundle PATH or --no-record" in line


@pytest.mark.parametrize("verb", ["wait", "launch"])
def test_bundle_path_with_a_nodes_profile_is_refused(tmp_path: Path, verb: str) -> None:
    cfg = tmp_path / "nodes.toml"
    cfg.write_text(f'[server]\ntimeout = 5\n[[nodes]]\nname = "a"\nlog = "{tmp_path / "a.log"}"\n'
                   f'[[nodes]]\nname = "b"\nlog = "{tmp_path / "b.log"}"\n')
    line = one_error_line(run_cli(verb, "--config", str(cfg), "--bundle", str(tmp_path / "x.gz"), timeout=60))
    assert "one bundle per node" in line


def test_a_bundle_path_that_cannot_be_written_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """`--bundle DIR` (or a path in no directory) is one line at the start: it ran the whole wait and then
    warned twice that it could not write the bundle (a hostile re-test)."""
    log = _log(tmp_path)
    line = one_error_line(run_cli("wait", "--log", str(log), "--bundle", str(tmp_path), timeout=60))
    assert "is a directory" in line
    line = one_error_line(run_cli("wait", "--log", str(log), "--bundle", str(tmp_path / "no" / "x.gz"), timeout=60))
    assert "no directory" in line
    assert not list(store.store_dir().glob(f"*{SUFFIX}"))  # nothing ran, nothing was recorded elsewhere
