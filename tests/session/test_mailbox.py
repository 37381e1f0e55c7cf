"""The front end's mailbox: each node's batches merged in order without their log text, the newest GPU round
and Board win, every queue capped with its drop policy, and the front end woken once."""

from __future__ import annotations

import threading

from symmtui.bringup.engine import EngineUpdate
from symmtui.judge.board import board_of
from symmtui.judge.verdict import NodeView
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
    assert batches[0].lines == () and batches[1].lines == ()  # no log text for a front end: the pane reads the file
    assert [m.our_pids for m in got if isinstance(m, GpuRound)] == [frozenset({4})]  # only the latest mattered
    assert [m.text for m in got if isinstance(m, Notice)] == ["hello"]
    assert box.take() == []
    box.put(Notice("again"))
    assert woken == [1, 1]


def test_a_relaunch_starts_over_and_a_late_batch_of_the_launch_before_is_dropped() -> None:
    lines = read_lines(READY_LOG, upto=20)
    _events, snap = replay(lines)
    box = Mailbox()
    box.put(_batch("a", lines[:10], snap))
    box.put(_batch("a", lines[10:20], snap, generation=1))  # the relaunch's first batch
    box.put(_batch("a", lines[:10], snap, generation=0))  # a late one of the launch before: dropped
    [fresh] = box.take()
    assert isinstance(fresh, EngineBatch) and fresh.restarted and fresh.generation == 1


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
