"""A rank that never joins the process group: rank 1 sleeps before init_process_group; rank 0's gloo set-up waits
for its address in the store and times out.

torchrun --nproc_per_node=2 gloo_never_joins.py
"""
from __future__ import annotations

import os
import time
from datetime import timedelta

import torch.distributed as dist

rank = int(os.environ["RANK"])
if rank == 1:
    time.sleep(40)  # never joins in time
dist.init_process_group("gloo", timeout=timedelta(seconds=10))
dist.barrier()
print(f"rank {rank}: joined", flush=True)
dist.destroy_process_group()
