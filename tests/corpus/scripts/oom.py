"""One allocation larger than the GPU: torch.empty of 200 GiB on a 141 GB H200.

torchrun --nproc_per_node=1 oom.py
"""
from __future__ import annotations

import torch

free, total = torch.cuda.mem_get_info(0)
print(f"GPU 0: {torch.cuda.get_device_name(0)}, free {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB", flush=True)
buf = torch.empty(200 * 2**30, dtype=torch.uint8, device="cuda:0")
print(f"allocated {buf.numel() / 2**30:.0f} GiB", flush=True)
