"""Two NCCL ranks on one GPU: every rank picks cuda:0, so NCCL's communicator set-up refuses (Duplicate GPU).

torchrun --nproc_per_node=2 dup_gpu.py
"""
from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
torch.cuda.set_device(0)  # the bug: local rank ignored, both ranks on GPU 0
dist.init_process_group("nccl", timeout=timedelta(seconds=60))
x = torch.ones(1024, device="cuda:0") * (rank + 1)
dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {rank}: all_reduce gave {x[0].item()}", flush=True)
dist.destroy_process_group()
