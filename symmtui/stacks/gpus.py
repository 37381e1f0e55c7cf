"""What the GPUs add to a hang: all idle (the hang is on the host side) or one busy (a rank spinning in a collective)."""

from __future__ import annotations

from collections.abc import Sequence

BUSY = 90  # % utilization: a GPU spinning (NCCL waits for a peer on the GPU, in a kernel that never ends)
IDLE = 10


def gpu_evidence(utilization: Sequence[int | None]) -> str | None:
    """One line from each GPU's utilization (None: not readable), or None when it says nothing."""
    known = [(i, u) for i, u in enumerate(utilization) if u is not None]
    if not known:
        return None
    busy = [i for i, u in known if u >= BUSY]
    idle = [i for i, u in known if u <= IDLE]
    n = len(known)
    if len(idle) == n:
        return (f"GPUs: all {n} at {max(u for _, u in known)} % or less: nothing runs on them; the hang is on "
                "the host side (init, a peer, I/O, a lock)")
    if busy and len(busy) + len(idle) == n and idle:
        which = ", ".join(f"GPU {i}" for i in busy)
        return (f"GPUs: {which} at {min(utilization[i] or 0 for i in busy)} % or more, the others idle: a rank "
                "spinning in a collective, waiting for peers that never joined")
    if len(busy) == n:
        return (f"GPUs: all {n} busy ({BUSY} % or more): every rank spins in a collective or a long kernel "
                "(NCCL waiting on each other, or a kernel that does not end)")
    return None
