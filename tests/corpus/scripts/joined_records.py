"""Several ranks writing records to one pipe at once (torchrun's shared stdout), in SGLang's record format.

The message text is this script's own (modelled on SGLang's stage lines, with real memory figures from torch);
what the log shows as evidence is how the ranks' concurrent writes interleave and join on one physical line.
print() writes a record's text and its newline in two write() calls (PYTHONUNBUFFERED=1), as a record printed
from several processes can be. The ranks meet at a gloo barrier before each stage, so they print at once.

PYTHONUNBUFFERED=1 torchrun --nproc_per_node=4 joined_records.py
"""
from __future__ import annotations

import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
fmt = logging.Formatter(f"[%(asctime)s TP{rank}] %(message)s", datefmt="%Y-%m-%d %H:%M:%S")


def say(msg: str) -> None:
    """One record, printed (text and newline are two writes)."""
    print(fmt.format(logging.makeLogRecord({"msg": msg, "levelno": logging.INFO})))


def avail_gb() -> float:
    if torch.cuda.is_available():
        return torch.cuda.mem_get_info(0)[0] / 2**30
    return 0.0


dist.init_process_group("gloo", timeout=timedelta(seconds=60))
dist.barrier()
say("Init torch distributed begin.")
dist.barrier()
say("Init torch distributed ends.")
dist.barrier()
say(f"Load weight begin. avail mem={avail_gb():.2f} GB")
device = "cuda:0" if torch.cuda.is_available() else "cpu"
before = avail_gb()
weights = []
for shard in range(1, 9):
    weights.append(torch.ones(2**28, dtype=torch.bfloat16, device=device))  # 0.5 GiB a shard
    dist.barrier()
    say(f"Loaded shard {shard}/8")
dist.barrier()
after = avail_gb()
say(f"Load weight end. type=script, dtype=torch.bfloat16, avail mem={after:.2f} GB, mem usage={before - after:.2f} GB.")
dist.barrier()
dist.destroy_process_group()
