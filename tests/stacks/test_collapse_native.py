"""Native stacks of two processes in the same CUDA call collapse into one group, whatever their addresses."""

from __future__ import annotations

from symmtui.stacks.collapse import collapse
from symmtui.stacks.model import Frame, ProcDump, ThreadStack


def _dump(pid: int, libc_address: str, inner: str = "cuStreamSynchronize") -> ProcDump:
    # The shape py-spy --native gave on a real H200 host for a process blocked in cuStreamSynchronize:
    # a named libcuda frame, the Python frames, and an unsymbolised libc frame named by its address.
    frames = (
        Frame(inner, "libcuda.so.580.159.04", "libcuda.so.580.159.04", 0, native=True),
        Frame("wait_for_peer", "/srv/hang.py", "hang.py", 15),
        Frame("<module>", "/srv/hang.py", "hang.py", 17),
        Frame(libc_address, "libc.so.6", "libc.so.6", 0, native=True),
    )
    return ProcDump(pid, "python3 hang.py", "ok", threads=(ThreadStack(pid, "MainThread", True, frames),))


def test_unsymbolised_native_frames_at_different_addresses_collapse() -> None:
    groups = collapse([_dump(435, "0x7f969de2a1ca"), _dump(436, "0x7f5af322a1ca")])
    assert len(groups) == 1
    assert sorted(p.pid for p in groups[0].procs) == [435, 436]


def test_a_different_named_native_frame_still_splits_the_groups() -> None:
    groups = collapse([_dump(435, "0x7f969de2a1ca"), _dump(436, "0x7f5af322a1ca", inner="cuCtxSynchronize")])
    assert len(groups) == 2
