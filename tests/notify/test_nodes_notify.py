"""A [[nodes]] profile notifies its aggregate verdict like one Session: `wait` (in process) posts
"CRASHED on gpu-b" and a READY to a real loopback webhook server, once each; the observer tells a
STALLED once, and again only after the aggregate moved on."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.core.readiness import State
from symmtui.launch.profile import load_profile
from symmtui.notify.config import NotifyConfig
from symmtui.notify.nodes import NodesNotes, attach_nodes
from symmtui.session.nodes import NodesUpdate, NodeView, aggregate, for_nodes
from tests.notify.kit import KEYERROR_LOG, READY_LOG, TOKEN, Receiver, receiver, snapshot_of


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    with receiver() as rec:
        yield rec


def _profile(tmp_path: Path, a: Path, b: Path, notify: str) -> Path:
    cfg = tmp_path / "pair.toml"
    cfg.write_text(f'[server]\n\n[[nodes]]\nname = "gpu-a"\nlog = "{a}"\n\n[[nodes]]\nname = "gpu-b"\nlog = "{b}"\n\n'
                   f'[notify]\nbell = false\ndesktop = false\n{notify}\n')
    return cfg


def test_wait_of_a_nodes_profile_posts_crashed_on_the_node(tmp_path: Path, hooks: Receiver,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    before = len(hooks.got)
    cfg = _profile(tmp_path, READY_LOG, KEYERROR_LOG, f'webhook = "{hooks.url("/pair/" + TOKEN)}"')
    assert main(["wait", "--config", str(cfg)]) == 1
    out, err = capsys.readouterr()
    assert "CRASHED on gpu-b" in out and err == ""
    got = hooks.wait_for(before + 1)[before:]
    assert [g.path for g in got] == ["/pair/" + TOKEN]  # once: the verdict, not each node's state
    body = got[0].body
    assert body["state"] == "CRASHED" and body["host"] == "gpu-b" and body["name"] == "pair"
    assert str(body["headline"]).startswith("CRASHED on gpu-b after ")
    assert "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)" in str(body["headline"])
    last = list(body["lines"])[-1]  # type: ignore[call-overload]
    assert last.startswith("nodes: gpu-a ") and last.endswith(", gpu-b crashed")  # gpu-a: wherever it was then
    assert body["log"] == str(KEYERROR_LOG)


def test_launchless_ready_pair_notifies_ready_through_the_profile_and_dashboard_hook(
        tmp_path: Path, hooks: Receiver) -> None:
    """The dashboard's wiring (attach_nodes on the NodeSet it shows), headless: READY once, from the head."""
    before = len(hooks.got)
    cfg = _profile(tmp_path, READY_LOG, READY_LOG, f'webhook = "{hooks.url("/ready/" + TOKEN)}"\nformat = "slack"')
    profile = load_profile(cfg)
    nodes = for_nodes(profile)
    rang: list[str] = []
    notifier = attach_nodes(nodes, profile.notify, bell=lambda: rang.append("bell") and None)
    from symmtui.session.nodeswait import NodesHeadless

    front = NodesHeadless(nodes, io.StringIO())
    nodes.follow()
    assert front.verdict(io.StringIO()).state is State.READY
    notifier.finish()
    got = hooks.wait_for(before + 1)[before:]
    assert len(got) == 1 and got[0].path == "/ready/" + TOKEN
    text = str(got[0].body["text"])
    assert text.startswith("*symmtui: READY · pair on gpu-a*\nREADY after ") and "nodes: gpu-a ready, gpu-b ready" in text
    assert rang == []  # [notify] bell = false


def test_stalled_is_told_once_and_again_after_the_aggregate_moved_on(tmp_path: Path) -> None:
    cfg = _profile(tmp_path, READY_LOG, KEYERROR_LOG, "")
    nodes = for_nodes(load_profile(cfg))
    from symmtui.notify.notifier import Notifier

    warned: list[str] = []
    notifier = Notifier(NotifyConfig(bell=False, desktop=False), name="pair", host="gpu-a", warn=warned.append)
    notes = NodesNotes(nodes, notifier)
    # real snapshots seen as STALLED / STARTING: gpu-b's (it crashed in an earlier phase) is behind gpu-a's
    stalled = replace(snapshot_of(KEYERROR_LOG), state=State.STALLED, cause=None, detail="no new log line for 300 s")
    starting = replace(snapshot_of(READY_LOG), state=State.STARTING)

    def tell(a: object, b: object) -> None:
        notes.observe(NodesUpdate(aggregate([NodeView("gpu-a", 0, a), NodeView("gpu-b", 1, b)])))  # type: ignore[arg-type]

    moved = replace(stalled, state=State.STARTING)
    tell(starting, stalled)
    tell(starting, stalled)  # the same verdict again (another node's phase changed): not told twice
    tell(starting, moved)  # it moved
    tell(starting, stalled)
    assert [n.headline.split(" after ")[0] for n in notifier.sent] == ["STALLED on gpu-b", "STALLED on gpu-b"]
    assert notifier.sent[0].host == "gpu-b" and "no new log line for 300 s" in notifier.sent[0].headline
    notifier.finish()
    nodes.close()
    assert warned == []
