"""Per-rank progress: the rank each real log line names, and who is behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from symmtui.judge.ranks import RankBoard, RankTag, compact, rank_of_line
from symmtui.judge.rules import RuleSet

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = Path(__file__).resolve().parent.parent / "corpus" / "cases"


def _first(case: str, needle: str) -> str:
    return next(ln for ln in (CASES / case).read_text().splitlines() if needle in ln)


@pytest.mark.parametrize(("case", "needle", "tag"), [
    # sgl-project/sglang#2812: data parallel and tensor parallel tags
    ("sglang-2812-serving-late-attach.log", "DP4 TP0] Prefill", RankTag("DP4 TP0")),
    # vllm-project/vllm#31480: vLLM v1 worker names with TP and EP
    ("vllm-31480-no-valid-attention-backend.log", "(Worker_TP4_EP4 pid=2532)", RankTag("TP4 EP4", 2532)),
    # vllm-project/vllm#17619: "VllmWorker rank=1"
    ("vllm-17619-default-moe-config-warning.log", "(VllmWorker rank=1 pid=236)", RankTag("rank 1", 236)),
    # vllm-project/vllm#14016: a v0 worker process without a rank: named by its pid
    ("vllm-14016-fa-error-lines-not-fatal.log", "(VllmWorkerProcess pid=3923)",
     RankTag("VllmWorkerProcess pid 3923", 3923)),
])
def test_the_rank_of_real_lines(case: str, needle: str, tag: RankTag) -> None:
    assert rank_of_line(_first(case, needle)) == tag


def test_lines_that_name_no_rank() -> None:
    # the engine core without a DP tag is one process, not a rank (gpustack/gpustack#2965)
    assert rank_of_line(_first("vllm-gpustack2965-lmcache-no-kernel-image.log", "(EngineCore_0 pid=96)")) is None
    ready = (FIXTURES / "sglang-tp8-ready.log").read_text().splitlines()
    assert rank_of_line(ready[0]) is None  # "[2026-11-29 09:40:05] server_args=..." has no rank tag


def test_compact_rank_lists() -> None:
    assert compact(["TP7", "TP0", "TP1", "TP2", "TP3", "TP4", "TP6"]) == "TP0-TP4, TP6, TP7"
    assert compact(["TP10", "TP9", "TP8", "TP2"]) == "TP2, TP8-TP10"
    assert compact(["DP1 TP0", "DP0 TP1", "DP0 TP0"]) == "DP0 TP0, DP0 TP1, DP1 TP0"


def _board(lines: list[str]) -> RankBoard:
    rs = RuleSet()
    board = RankBoard()
    for i, line in enumerate(lines):
        m = rs.match(line)
        board.feed(line, float(i), m.rule.phase if m else None, m.rule.ends if m else None)
    return board


def test_every_rank_level_names_nobody() -> None:
    lines = (FIXTURES / "sglang-tp8-ready.log").read_text().splitlines()
    board = _board(lines)
    assert len(board.states()) == 8
    summary = board.summary(float(len(lines)))
    assert summary is not None and summary.behind == () and summary.text == ""


def test_one_rank_still_loading_is_named_with_its_silence() -> None:
    lines = (FIXTURES / "sglang-tp8-ready.log").read_text().splitlines()
    cut = next(i for i, ln in enumerate(lines) if "Load weight end" in ln)
    # the log as it stood while TP5 had not finished loading: its later lines not written yet
    early = [ln for ln in lines[: cut + 12] if " TP5]" not in ln or "Load weight end" not in ln]
    board = _board(early)
    summary = board.summary(float(len(early)) + 143)
    assert summary is not None
    assert [r.label for r in summary.behind] == ["TP5"]
    tp5 = next(i for i, ln in enumerate(early) if "TP5] Load weight begin" in ln)
    assert summary.text == (f"7/8 ranks finished loading weights; TP5 still loading weights, "
                            f"silent {len(early) + 143 - tp5:.0f} s")


def test_a_log_without_rank_prefixes_has_no_rank_summary() -> None:
    lines = (CASES / "vllm-14016-fa-error-lines-not-fatal.log").read_text().splitlines()
    plain = [ln for ln in lines if "pid=" not in ln]
    assert _board(plain).summary(1e6) is None
