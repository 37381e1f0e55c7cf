"""What the GPUs add to a hang: all idle (the hang is on the host side) or one busy (a rank spinning in a collective)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from msgspec import Struct

from symmtui.gpu.results import GpuSample

BUSY = 90  # % utilization: a GPU spinning (NCCL waits for a peer on the GPU, in a kernel that never ends)
IDLE = 10


class GpuEvidence(Struct, frozen=True):
    """One reading of the GPUs next to a stall: the facts, a short tag, and what they mean."""

    facts: str
    """"all 8 GPUs at 0 %" / "GPU 3 at 100 %, the others at 0 %"."""
    tag: str
    """"host side" / "spinning in a collective" / "all spinning"."""
    meaning: str

    def line(self) -> str:
        """The whole line (the stacks summary, `wait`'s STALLED block)."""
        return f"GPUs: {self.facts} ({self.tag}): {self.meaning}"

    def short(self) -> str:
        """The facts and the tag only (the GPU panel's title)."""
        return f"{self.facts} ({self.tag})"


def _pct(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return f"{low} %" if low == high else f"{low}-{high} %"


def _gpus(indices: Sequence[int]) -> str:
    return ("GPU " if len(indices) == 1 else "GPUs ") + ", ".join(str(i) for i in indices)


def evidence(utilization: Sequence[int | None]) -> GpuEvidence | None:
    """What each GPU's utilization (None: not readable) says about a hang, or None when it says nothing."""
    known = [(i, u) for i, u in enumerate(utilization) if u is not None]
    if not known:
        return None
    busy = [i for i, u in known if u >= BUSY]
    idle = [i for i, u in known if u <= IDLE]
    n = len(known)
    if len(idle) == n:
        return GpuEvidence(f"all {n} GPUs at {_pct([u for _, u in known])}", "host side",
                           "nothing runs on them; the hang is in the host's code (init, a peer, I/O, a lock)")
    if busy and idle and len(busy) + len(idle) == n:
        return GpuEvidence(f"{_gpus(busy)} at {_pct([u for i, u in known if i in busy])}, the others at "
                           f"{_pct([u for i, u in known if i in idle])}", "spinning in a collective",
                           "a rank waits on its GPU for peers that never joined; look at the idle ranks' stacks")
    if len(busy) == n:
        return GpuEvidence(f"all {n} GPUs at {_pct([u for _, u in known])}", "all spinning",
                           "every rank spins in a collective or a long kernel (NCCL waiting on each other, "
                           "or a kernel that does not end)")
    return None


def gpu_evidence(utilization: Sequence[int | None]) -> str | None:
    """The evidence as one line, or None when the utilization says nothing about a hang."""
    ev = evidence(utilization)
    return ev.line() if ev is not None else None


def utilization_of(samples: Iterable[GpuSample]) -> list[int | None]:
    """Each GPU's utilization in one sampling round (None where NVML could not say)."""
    return [s.utilization_gpu if isinstance(s.utilization_gpu, int) else None for s in samples]
