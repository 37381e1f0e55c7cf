"""The front end's mailbox: each node's batches merged in order, the newest GPU round and verdict win, every
queue capped with its drop policy (oldest lines dropped and counted), and the front end woken once."""

from __future__ import annotations

import threading

from symmtui.core.board import board_of
from symmtui.core.engine import EngineUpdate
from symmtui.core.verdict import NodeView
from symmtui.session import mailbox as mailbox_mod
from symmtui.session.mailbox import Mailbox, Relay
from symmtui.session.messages import EngineBatch, GpuRound, Notice, SessionMessage, VerdictReached
from tests.ui.kit import READY_LOG, fixed_gpus, read_lines, replay


def _batch(node: str, lines: list, snap: object, generation: int = 0) -> EngineBatch:
    update = EngineUpdate(tuple(lines), (), (), snap, 0, generation)  # type: ignore[arg-type]
    return EngineBatch(node, update, None, board_of([NodeView(node, snap)]), restarted=generation > 0)  # type: ignore[arg-type]


def test_batches_merge_per_node_gpu_rounds_collapse_and_the_front_end_is_woken_once() -> None:
    lines = read_lines(READY_LOG, upto=30)
    _events, snap = replay(lines)
    gpus, _topo = fixed_gpus(0.5)
    woken: list[int] = []
    box = Mailbox()
    box.attach(lambda: woken.append(1))
    for i in range(3):
        box.put(_batch("a", lines[i * 10:(i + 1) * 10], snap))
    box.put(_batch("b", lines[:5], snap))
    for i in range(5):
        box.put(GpuRound(gpus, frozenset({i}), (12, 0)))
    box.put(Notice("hello"))
    assert woken == [1]  # one wake while the front end had not taken anything
    got = box.take()
    batches = [m for m in got if isinstance(m, EngineBatch)]
    assert [b.node for b in batches] == ["a", "b"]
    assert list(batches[0].lines) == lines and list(batches[1].lines) == lines[:5]  # every line, in order
    assert [m.our_pids for m in got if isinstance(m, GpuRound)] == [frozenset({4})]  # only the latest mattered
    assert [m.text for m in got if isinstance(m, Notice)] == ["hello"]
    assert box.take() == []
    box.put(Notice("again"))
    assert woken == [1, 1]


def test_past_the_cap_the_oldest_lines_go_and_are_counted_and_a_relaunch_starts_over(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(mailbox_mod, "MAX_LINES", 25)
    lines = read_lines(READY_LOG, upto=60)
    _events, snap = replay(lines)
    box = Mailbox()
    for i in range(6):
        box.put(_batch("a", lines[i * 10:(i + 1) * 10], snap))
    [merged] = box.take()
    assert isinstance(merged, EngineBatch)
    assert list(merged.lines) == lines[35:] and merged.dropped == 35
    box.put(_batch("a", lines[:10], snap))
    box.put(_batch("a", lines[10:20], snap, generation=1))  # the relaunch's first batch
    box.put(_batch("a", lines[:10], snap, generation=0))  # a late one of the launch before: dropped
    [fresh] = box.take()
    assert isinstance(fresh, EngineBatch) and fresh.restarted and list(fresh.lines) == lines[10:20]


def test_notes_are_capped_and_counted() -> None:
    box = Mailbox()
    for i in range(mailbox_mod.MAX_NOTES + 7):
        box.put(Notice(f"n{i}"))
    got = box.take()
    assert len(got) == mailbox_mod.MAX_NOTES and box.dropped_notes == 7
    assert isinstance(got[0], Notice) and got[0].text == "n7"


def test_a_relay_past_its_cap_drops_the_oldest_non_verdict_and_never_a_verdict() -> None:
    lines = read_lines(READY_LOG, upto=2)
    _events, snap = replay(lines)
    gate, entered = threading.Event(), threading.Event()
    seen: list[SessionMessage] = []

    def slow(message: SessionMessage) -> None:
        entered.set()
        gate.wait(30)
        seen.append(message)

    relay = Relay(slow, name="slow", failed=lambda text: None, cap=4)
    verdict = VerdictReached(board_of([NodeView("a", snap)]), 0, None, None)
    relay.put(Notice("first"))
    assert entered.wait(30)  # the observer holds it: the next ones wait in the inbox
    for i in range(6):
        relay.put(verdict if i == 1 else Notice(f"n{i}"))
    gate.set()
    relay.close(10.0)
    assert relay.dropped == 2  # n0 and n2: the inbox kept n3, n4, n5 and the verdict
    assert seen[1:] == [verdict, Notice("n3"), Notice("n4"), Notice("n5")]
