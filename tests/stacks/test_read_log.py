"""The log beside a stacks dump is read record by record: two ranks' records written onto one physical line
(concurrent writes, as a real 8-rank torchrun job on an H200 printed them) each count for their rank."""

from __future__ import annotations

import time
from pathlib import Path

from symmtui.stacks.report import read_log

# Verbatim from the log of the 8-rank gloo job run on the lent H200 (torch 2.11): docs/h200-2026-12-01-job-joined.txt.
H200_JOB = """\
W1201 14:41:12.960000 459 torch/distributed/run.py:851] *****************************************
[2026-12-01 14:41:15 TP2] Init torch distributed begin.
[2026-12-01 14:41:15 TP4] Init torch distributed begin.
[2026-12-01 14:41:15 TP6] Init torch distributed begin.
[2026-12-01 14:41:16 TP1] Init torch distributed begin.
[2026-12-01 14:41:16 TP3] Init torch distributed begin.
[2026-12-01 14:41:16 TP0] Init torch distributed begin.
[2026-12-01 14:41:16 TP7] Init torch distributed begin.
[2026-12-01 14:41:16 TP5] Init torch distributed begin.
[2026-12-01 14:41:16 TP0] Init torch distributed ends. mem usage=2.00 GB[2026-12-01 14:41:16 TP4] Init torch distributed ends. mem usage=2.00 GB[2026-12-01 14:41:16 TP6] Init torch distributed ends. mem usage=2.00 GB


[2026-12-01 14:41:16 TP6] Load weight begin. avail mem=120.00 GB
[2026-12-01 14:41:16 TP0] Load weight begin. avail mem=120.00 GB[2026-12-01 14:41:16 TP4] Load weight begin. avail mem=120.00 GB

[2026-12-01 14:41:16 TP1] Init torch distributed ends. mem usage=2.00 GB
[2026-12-01 14:41:16 TP1] Load weight begin. avail mem=120.00 GB
[2026-12-01 14:41:16 TP2] Init torch distributed ends. mem usage=2.00 GB
[2026-12-01 14:41:16 TP2] Load weight begin. avail mem=120.00 GB
[2026-12-01 14:41:16 TP3] Init torch distributed ends. mem usage=2.00 GB
[2026-12-01 14:41:16 TP5] Init torch distributed ends. mem usage=2.00 GB
[2026-12-01 14:41:16 TP3] Load weight begin. avail mem=120.00 GB
[2026-12-01 14:41:16 TP5] Load weight begin. avail mem=120.00 GB
[2026-12-01 14:41:16 TP7] Init torch distributed ends. mem usage=2.00 GB
[2026-12-01 14:41:16 TP7] Load weight begin. avail mem=120.00 GB
"""


def test_joined_records_each_reach_their_rank(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(H200_JOB, encoding="utf-8")
    facts = read_log(log)
    summary = facts.board.summary(time.time())
    assert facts.phase == "loading weights"
    assert summary.total == 8 and summary.behind == () and summary.text == ""  # nobody is behind: all 8 went on
    assert {(r.label, r.phase, r.finished) for r in summary.ranks} == {
        (f"TP{i}", "loading weights", "init distributed") for i in range(8)}
