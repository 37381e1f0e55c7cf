"""The recorder's bounds and its codec, fed real lines and samples directly (no processes, no screen)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.bringup.engine import EngineUpdate
from symmtui.bundle import format as fmt
from symmtui.bundle import store
from symmtui.bundle.codec import decode, encode
from symmtui.bundle.format import read_bundle
from symmtui.bundle.recorder import Recorder
from symmtui.bundle.replay import Recording
from symmtui.judge.board import board_of
from symmtui.judge.events import Event
from symmtui.judge.readiness import Snapshot, State
from symmtui.judge.verdict import NodeView
from symmtui.launch.envinfo import EnvInfo
from symmtui.logs.decode import LogLine
from symmtui.session.messages import EngineBatch, GpuRound, TopologyRead
from tests.ui.kit import CRASH_LOG, fixed_gpus, read_lines, replay

Crash = tuple[list[LogLine], list[Event], Snapshot]


@pytest.fixture(scope="module")
def crash() -> Crash:
    lines = read_lines(CRASH_LOG)
    events, snap = replay(lines)
    return lines, events, snap


def _batch(lines: tuple[LogLine, ...], events: tuple[Event, ...], snap: Snapshot, generation: int = 0,
           log_path: str | None = None, restarted: bool = False) -> EngineBatch:
    """One engine batch of node "h" as the Session posts it (its verdict view: this node's state)."""
    update = EngineUpdate(lines, events, (), snap, 0, generation)
    return EngineBatch("h", update, log_path, board_of([NodeView("h", snap)]), restarted)


def _recorder(dest: Path) -> Recorder:
    return Recorder(name="t", host="h", command=None, dest=dest,
                    env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))


def test_the_log_keeps_its_head_and_tail_and_counts_the_middle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               crash: Crash) -> None:
    lines, events, snap = crash
    monkeypatch.setattr(fmt, "HEAD_BYTES", 4000)
    monkeypatch.setattr(fmt, "TAIL_BYTES", 6000)
    rec = _recorder(tmp_path / "b.json.gz")
    for i in range(0, len(lines), 10):  # the engine's batches
        rec.ingest(i * 0.01, _batch(tuple(lines[i:i + 10]), (), snap, 0, None))
    path = rec.write(final=True)
    assert path is not None
    bundle = read_bundle(path)
    log = bundle.data["log"]
    kept = [r[2] for r in bundle.lines]
    assert kept[0] == 1 and kept[-1] == lines[-1].no  # the first lines and the last ones (the crash) stay
    assert log["omitted_lines"] == len(lines) - len(kept) > 0
    assert log["lines_seen"] == len(lines)
    assert sum(len(r[4]) + 24 for r in log["tail"]) <= 6000


def test_gpu_rounds_are_downsampled_past_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fmt, "MAX_GPU_ROUNDS", 50)
    gpus, topo = fixed_gpus(0.5)
    rec = _recorder(tmp_path / "b.json.gz")
    rec.ingest(0.0, TopologyRead(topo, None))
    for i in range(400):
        rec.ingest(float(i), GpuRound(replace(gpus, time=1000.0 + i), frozenset({4242}), (12, 0)))
    doc = rec.document()
    rounds = doc["gpu"]["rounds"]
    assert len(rounds) <= 50 and doc["gpu"]["stride"] == 8
    times = [r[0] for r in rounds]
    assert times == sorted(times) and times[0] == 0.0 and times[-1] >= 350  # the whole span, evenly
    assert rounds[0][3] == [4242] and len(rounds[0][2]) == 8


def test_a_changed_judgement_is_kept_and_time_passing_is_not(tmp_path: Path,
                                                             crash: Crash) -> None:
    _lines, _events, snap = crash
    rec = _recorder(tmp_path / "b.json.gz")
    starting = replace(snap, state=State.STARTING, cause=None)
    for i in range(20):
        rec.ingest(float(i), _batch((), (), replace(starting, elapsed=float(i)), 0, None))
    rec.ingest(21.0, _batch((), (), snap, 0, None))
    assert [s[2]["state"] for s in rec.document()["snapshots"]] == [
        {"@e": "State", "v": "starting"}, {"@e": "State", "v": "crashed"}]


def test_the_file_stays_under_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        crash: Crash) -> None:
    lines, events, snap = crash
    rec = _recorder(tmp_path / "b.json.gz")
    for i in range(0, len(lines), 50):
        rec.ingest(float(i), _batch(tuple(lines[i:i + 50]), tuple(events), snap, 0, None))
    whole = len(rec.encoded())
    monkeypatch.setattr(fmt, "MAX_FILE_BYTES", whole // 2)
    data = rec.encoded()
    assert len(data) <= whole // 2
    doc = json.loads(gzip.decompress(data))
    assert doc["log"]["omitted_lines"] > 0  # the log went first
    assert doc["snapshots"][-1] == rec.document()["snapshots"][-1]  # the last judgement always stays


def test_the_codec_gives_back_what_it_kept(crash: Crash) -> None:
    _lines, events, snap = crash
    back = decode(json.loads(json.dumps(encode(snap))))
    assert back == snap and back.state is State.CRASHED and back.cause == snap.cause
    assert decode(json.loads(json.dumps(encode(events)))) == tuple(events)
    _gpus, topo = fixed_gpus(0.0)
    assert decode(json.loads(json.dumps(encode(topo)))) == topo
    with pytest.raises(ValueError, match="unknown record"):
        decode({"@": "Popen", "args": ["rm"]})
    with pytest.raises(ValueError, match="has no field"):
        decode({"@": "PhaseSpan", "name": "x", "start": 0.0, "evil": 1})


def test_a_bundle_written_at_the_verdict_replays(tmp_path: Path, crash: Crash) -> None:
    lines, events, snap = crash
    rec = _recorder(tmp_path / "b.json.gz")
    rec.ingest(0.5, _batch(tuple(lines), tuple(events), snap, 0, None))
    path = rec.write()
    assert path is not None
    recording = Recording(read_bundle(path))
    at = recording.snapshot_at(0, 10.0)
    assert at is not None and at[0].state is State.CRASHED and at[0].last_lines[-1] == lines[-1].plain
    assert read_bundle(path).data["final"] is False


def test_an_early_bundle_with_plain_state_names_still_replays(tmp_path: Path, crash: Crash) -> None:
    lines, events, snap = crash
    rec = _recorder(tmp_path / "b.json.gz")
    rec.ingest(0.5, _batch(tuple(lines), tuple(events), snap, 0, None))
    path = rec.write()
    assert path is not None
    doc = json.loads(gzip.decompress(path.read_bytes()))
    for s in doc["snapshots"]:
        s[2]["state"] = s[2]["state"]["v"]  # how the first recorder wrote it (a StrEnum kept as a string)
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    at = Recording(read_bundle(path)).snapshot_at(0, 1.0)
    assert at is not None and at[0].state is State.CRASHED


def test_a_relaunch_moves_the_bundle_to_the_new_logs_name(tmp_path: Path, crash: Crash) -> None:
    lines, events, snap = crash
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text("x\n")
    second.write_text("y\n")
    rec = Recorder(name="t", host="h", command=None, env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
    rec.ingest(1.0, _batch(tuple(lines), tuple(events), snap, 0, str(first)))
    a = rec.write()
    assert a is not None and a.parent == store.store_dir() and a.name.startswith(store.stem(first, "") + ".")
    ready = replace(snap, state=State.READY, cause=None)
    rec.ingest(2.0, _batch(tuple(lines[:3]), (), ready, 1, str(second), True))
    b = rec.write(final=True)
    assert b is not None and b.name.startswith(store.stem(second, "") + ".")
    earlier, whole = read_bundle(a), read_bundle(b)
    assert [g["generation"] for g in earlier.data["generations"]] == [0]
    assert [g["generation"] for g in whole.data["generations"]] == [0, 1]  # the session's whole story


def test_another_runs_bundle_of_the_same_log_is_kept(tmp_path: Path, crash: Crash) -> None:
    lines, events, snap = crash
    log = tmp_path / "server.log"
    log.write_text("x\n")
    paths = []
    for _run in range(3):  # e.g. `symmtui launch`, then `symmtui wait --log` twice on its log
        rec = Recorder(name="t", host="h", command=None, env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
        rec.ingest(1.0, _batch(tuple(lines), tuple(events), snap, 0, str(log)))
        paths += [rec.write(), rec.write(final=True)]  # a run's second write replaces its own first
    names = [p.name for p in paths if p is not None]
    assert len(names) == 6 and names[0::2] == names[1::2] and len(set(names)) == 3, names
    assert all(n.startswith(store.stem(log, "") + ".") for n in names)  # three runs of one log, three files
    empty = Recorder(name="t", host="h", command=None, dest=tmp_path / f"none{fmt.SUFFIX}",
                     env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
    empty.start()
    empty.close()  # a run that showed nothing (no terminal, a usage error) leaves no file
    assert not (tmp_path / f"none{fmt.SUFFIX}").exists()


def test_only_the_lines_kept_are_redacted_and_every_kept_one_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                crash: Crash) -> None:
    """A flood of lines costs no redaction for those dropped from the tail; a secret in a kept line of
    the head or the tail is masked in the file."""
    from symmtui.bundle import recorder

    _lines, _events, snap = crash
    monkeypatch.setattr(fmt, "HEAD_BYTES", 2000)
    monkeypatch.setattr(fmt, "TAIL_BYTES", 3000)
    calls: list[str] = []
    real = recorder.redact

    def counting(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(recorder, "redact", counting)
    secret = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789"
    flood = [LogLine(i + 1, i * 100, f"[TP0] step {i} {secret if i in (3, 19_990) else ''}",
                     f"[TP0] step {i}") for i in range(20_000)]
    rec = _recorder(tmp_path / "b.json.gz")
    for i in range(0, len(flood), 1000):
        rec.ingest(i * 0.001, _batch(tuple(flood[i:i + 1000]), (), snap))
    line_calls = sum(1 for c in calls if c.startswith("[TP0] step"))
    assert line_calls < 200  # the head's lines only, nothing of the rest of the 20,000
    path = rec.write(final=True)
    assert path is not None
    bundle = read_bundle(path)
    texts = [r[4] for r in bundle.lines]
    assert any("step 3 " in t for t in texts) and any("step 19990 " in t for t in texts)
    assert not any("abcdefghijklmnopqrstuvwxyz0123456789" in t for t in texts)
    kept = len(texts)
    assert sum(1 for c in calls if c.startswith("[TP0] step")) <= kept
