"""A collective that one rank never enters: rank 1 sleeps instead of calling all_reduce; gloo times out on rank 0.

torchrun --nproc_per_node=2 gloo_timeout.py
"""
from __future__ import annotations

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
dist.init_process_group("gloo", timeout=timedelta(seconds=10))
print(f"rank {rank}: process group up", flush=True)
if rank == 1:
    time.sleep(40)  # stuck (a hung load, say): never reaches the all_reduce
else:
    x = torch.ones(4)
    dist.all_reduce(x)
    print(f"rank {rank}: all_reduce gave {x.tolist()}", flush=True)
dist.destroy_process_group()
