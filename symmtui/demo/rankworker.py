"""One rank of the demo server's hang story: a process titled as SGLang's scheduler, stuck where told.

Run by path (standard library only) with argv[0] set to the title SGLang's setproctitle gives its
scheduler processes (``sglang::scheduler_TP3``), so /proc/PID/cmdline reads as it does on a real server:
``sglang::scheduler_TP3 rankworker.py RANK HANG_RANK SETSID``. It prints its rank's lines to stdout
(the server's log), then blocks: the hang rank inside NCCL communicator init, the others at a
barrier waiting for it. It ends when its parent (the server) does.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1


def stamp(rank: int) -> str:
    return f"[{_dt.datetime.now().strftime('%Y-%m-%d %H:%M:%S')} TP{rank}]"


def say(rank: int, text: str) -> None:
    os.write(1, f"{stamp(rank)} {text}\n".encode())


def stay(parent: int) -> None:
    """Block here (this frame is innermost in the stack) until the server is gone."""
    while os.getppid() == parent:
        time.sleep(0.2)
    sys.exit(0)


def nccl_comm_init_rank(parent: int) -> None:
    stay(parent)


def barrier(parent: int) -> None:
    stay(parent)


def init_process_group(rank: int, hang_rank: int, parent: int) -> None:
    if rank == hang_rank:
        nccl_comm_init_rank(parent)
    say(rank, "Init torch distributed ends. mem usage=0.42 GB")


def load_model(rank: int, parent: int) -> None:
    barrier(parent)


def main(argv: list[str]) -> int:
    rank, hang_rank, setsid = int(argv[1]), int(argv[2]), argv[3] == "1"
    parent = os.getppid()
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl here: the getppid loop still ends us
    if setsid:
        os.setsid()  # as SGLang's schedulers do (sgl-project/sglang#23627)
    say(rank, "Init torch distributed begin.")
    init_process_group(rank, hang_rank, parent)
    load_model(rank, parent)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
