"""Hang hints live in the catalogue (kind "hang", keyed by phase): shipped, sourced, the user's first, bad ones one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from symmtui.judge.rules import HANG_PHASES, Kind, RuleSet, user_ruleset
from symmtui.launch.profile import load_profile
from symmtui.stacks.collapse import collapse
from symmtui.stacks.model import Frame, ProcDump, ThreadStack
from symmtui.tables.catalogue import CatalogueError, builtin_entries, load_file

SOURCE = re.compile(r"[\w.-]+/[\w.-]+#\d+")


def _dump(pid: int, rank: str, *frames: tuple[str, str]) -> ProcDump:
    stack = tuple(Frame(name, path, path.rsplit("/", 1)[-1], 10) for name, path in frames)
    return ProcDump(pid, "python3 -m sglang.launch_server", "ok", threads=(ThreadStack(pid, "MainThread", True, stack),),
                    rank=rank)


NCCL = ("ncclCommInitRank", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py")
SGLANG = ("init_torch_distributed", "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner.py")
BARRIER = ("barrier", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py")


def test_every_hang_phase_has_a_sourced_shipped_hint_and_none_matches_a_line() -> None:
    hangs = [r for r in builtin_entries() if r.kind is Kind.HANG]
    assert {r.phase for r in hangs} == set(HANG_PHASES)
    for r in hangs:
        assert r.source and all(SOURCE.fullmatch(s) for s in r.source), r.id
        assert r.cause and r.action is not None and r.action.text, r.id
    rs = RuleSet()
    assert not any(r.kind is Kind.HANG for r in rs.rules), "hang entries are not line rules"
    assert rs.match("NCCL init") is None
    nccl = rs.hang_hints("NCCL init")
    assert [r.id for r in nccl] == ["hang-nccl-init-p2p", "hang-nccl-init-missing-peer"]
    assert nccl[0].action is not None and (nccl[0].action.env, nccl[0].action.value) == ("NCCL_P2P_DISABLE", "1")
    # an engine's own entry is left out for the other engine, kept when the engine is not known
    assert [r.engine for r in rs.hang_hints("CUDA graph capture", "vllm")] == ["vllm"]
    assert len(rs.hang_hints("CUDA graph capture")) == 2


def test_collapse_names_the_phase_and_the_catalogue_hints_follow_it() -> None:
    dumps = [_dump(100 + i, f"TP{i}", BARRIER, SGLANG) for i in range(7)] + [_dump(107, "TP7", NCCL, SGLANG)]
    groups = collapse(dumps)
    assert [(g.labels, g.phase) for g in groups] == [("TP0-TP6", "waiting for peers"), ("TP7", "NCCL init")]
    assert [h.id for h in groups[1].hints] == ["hang-nccl-init-p2p", "hang-nccl-init-missing-peer"]
    assert "NCCL_P2P_DISABLE=1" in groups[1].hints[0].text and "IOMMU/ACS" in groups[1].hints[0].text
    assert groups[1].to_json()["hints"][0]["source"] == ["NVIDIA/nccl#631", "NVIDIA/nccl#2079", "vllm-project/vllm#36570"]


HANG_ENTRY = ('id = "site-nccl"\nkind = "hang"\nphase = "NCCL init"\ncause = "our PCIe hosts need it"\n'
              'action = { type = "investigate", text = "ask the cluster team to turn ACS off" }\n')


def test_a_users_hang_hint_comes_first_from_a_profile_or_the_xdg_file(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    (tmp_path / "cfg" / "symmtui").mkdir(parents=True)
    (tmp_path / "cfg" / "symmtui" / "catalogue.toml").write_text("[[entry]]\n" + HANG_ENTRY.replace("site-nccl", "xdg-nccl"))
    prof = tmp_path / "symmtui.toml"
    prof.write_text('[server]\nlog = "server.log"\n[[rules.entry]]\n' + HANG_ENTRY)
    rs = user_ruleset(profile_entries=load_profile(prof).entries)
    groups = collapse([_dump(1, "TP0", NCCL, SGLANG)], ruleset=rs)
    assert [h.id for h in groups[0].hints] == ["site-nccl", "xdg-nccl", "hang-nccl-init-p2p", "hang-nccl-init-missing-peer"]
    assert groups[0].hints[0].text == "our PCIe hosts need it: ask the cluster team to turn ACS off"


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        (HANG_ENTRY.replace('"NCCL init"', '"loading"'), "phase"),
        (HANG_ENTRY.replace('phase = "NCCL init"\n', ""), "phase"),
        (HANG_ENTRY + 'patterns = ["ncclCommInitRank"]\n', "patterns"),
        (HANG_ENTRY.replace('action = { type = "investigate", text = "ask the cluster team to turn ACS off" }\n', ""),
         "action"),
        (HANG_ENTRY.replace('our PCIe hosts need it', 'see {summary}'), "cause"),
    ],
)
def test_a_bad_hang_entry_is_one_line_naming_file_and_key(tmp_path: Path, entry: str, key: str) -> None:
    path = tmp_path / "catalogue.toml"
    path.write_text("[[entry]]\n" + entry)
    with pytest.raises(CatalogueError) as err:
        load_file(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and "(id 'site-nccl')" in msg and f": {key}:" in msg, msg
