"""One torchrun rank killed with SIGKILL (as the OOM killer or `kill -9` would): rank 1 kills itself; rank 0 waits.

torchrun --nproc_per_node=2 sigkill.py
"""
from __future__ import annotations

import os
import signal
import time

rank = int(os.environ["RANK"])
print(f"rank {rank}: pid {os.getpid()} started", flush=True)
time.sleep(2)
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
print(f"rank {rank}: done", flush=True)
