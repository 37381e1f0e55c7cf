"""Event to diagnosis: the cause in plain words, what to do next, and the intent a button can carry out."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from symmtui.core.events import Event

Intent = Literal["patch", "relaunch", "stop"]


@dataclass(frozen=True)
class Diagnosis:
    """What went wrong, in words a tired engineer reads at 3 a.m., and the next step."""

    cause: str
    action: str
    intent: Intent | None = None


PortOwner = Callable[[int], str | None]
"""port -> "pid 1234 (python -m sglang...)" or None; the launcher's ``ports.port_owner`` is one."""


_SIGNAL = re.compile(r"\((SIG[A-Z0-9]+)\)")
_CAP = re.compile(r"(?:KeyError: |capability )'?(\d+)(?:\.\d)?'?")
_SYMM_FILES = ("torch_symm_mem", "all_reduce_utils", "symm_mem.py", "TORCH_SYMM_MEM", "SYMM_MEM_ALL_REDUCE", "_WORLD_SIZES_MULTIMEM")
_PORTS = (
    re.compile(r"',\s*(\d{2,5})\)"),  # ('0.0.0.0', 30000)
    re.compile(r"\bport\s*[=:]?\s*(\d{2,5})\b", re.IGNORECASE),
    re.compile(r"[\w\].]:(\d{2,5})\b"),  # host:port
)


def _port(text: str) -> int | None:
    for rx in _PORTS:
        m = rx.search(text)
        if m is not None:
            return int(m.group(1))
    return None


def _text(event: Event) -> str:
    return "\n".join((event.summary, event.text, *event.block))


def diagnose(event: Event, *, port_owner: PortOwner | None = None) -> Diagnosis | None:
    """A diagnosis for a crash or warning event, or None when there is nothing useful to add.

    ``port_owner`` names the process holding a port (for "Address already in use"); None: not asked.
    """
    did = event.diagnosis
    text = _text(event)
    if did == "key_error" or (did == "traceback" and "KeyError" in event.summary):
        m = _CAP.search(event.summary)
        if m and any(f in text for f in _SYMM_FILES):
            cap = m.group(1)
            return Diagnosis(
                cause=f"SGLang lacks compute capability {cap} in its torch symmetric-memory tables "
                f"(this GPU is SM{cap}0; {'Blackwell RTX' if cap == '12' else 'a newer part'})",
                action="press p to apply the SM120 patch (or `symmtui patch apply`), then relaunch; "
                "or drop --enable-torch-symm-mem",
                intent="patch",
            )
        return Diagnosis(
            cause=f"a lookup failed: {event.summary}",
            action="read the traceback below; the innermost frame names the table and the key",
        )
    if did == "no_kernel_image" or "no kernel image is available" in text:
        return Diagnosis(
            cause="a CUDA wheel was built without this GPU's architecture (for example FlashInfer or a "
            "custom kernel on SM120): it has no kernel image for this device",
            action="install a build for this GPU's compute capability (or one built with PTX), or pick an "
            "attention/sampling backend that supports it; the traceback's innermost frame names the package",
        )
    if did == "oom" or "OutOfMemoryError" in text or "out of memory" in text:
        return Diagnosis(
            cause="the GPU ran out of memory",
            action="lower --mem-fraction-static / --max-running-requests / context length, use more GPUs "
            "(tensor parallelism), or check that no orphan process from an earlier run holds GPU memory",
            intent="relaunch",
        )
    if did == "nccl_timeout":
        return Diagnosis(
            cause="an NCCL collective timed out: one rank stopped answering (hung, crashed, or blocked)",
            action="look for the first error from any rank above; check the GPU interconnect "
            "(NCCL_DEBUG=INFO) and that every rank sees the same GPUs",
            intent="relaunch",
        )
    if did == "nccl":
        return Diagnosis(
            cause="NCCL (GPU-to-GPU communication) failed",
            action="rerun with NCCL_DEBUG=INFO to see which transport failed; check P2P/IOMMU settings "
            "and that no other job uses the GPUs",
            intent="relaunch",
        )
    if did == "cuda_error":
        return Diagnosis(
            cause="a CUDA call failed: " + event.summary,
            action="CUDA errors are reported asynchronously: rerun with CUDA_LAUNCH_BLOCKING=1 to find the "
            "call; check the driver with `symmtui gpus`",
            intent="relaunch",
        )
    if did == "address_in_use":
        port = _port(event.summary) or _port(event.text)
        owner = port_owner(port) if (port_owner is not None and port is not None) else None
        held = f"port {port}" if port else "the server's port"
        who = f" by {owner}" if owner else " (probably by the server from the last run)"
        return Diagnosis(
            cause=f"{held} is already in use{who}",
            action="stop the old server (`symmtui stop`), or launch on another --port",
            intent="stop",
        )
    if did == "killed":
        return Diagnosis(
            cause="the process was killed, most often by the kernel's OOM killer (host RAM, not GPU memory)",
            action="check `dmesg | grep -i oom` / `journalctl -k`; lower host memory use (fewer loader "
            "workers, a smaller --cpu-offload-gb), then relaunch",
            intent="relaunch",
        )
    if did == "segfault":
        return Diagnosis(
            cause="a native crash (segmentation fault / core dump) in a C/CUDA extension or the driver",
            action="check that torch, the CUDA runtime, FlashInfer and the driver versions match; rerun "
            "with PYTHONFAULTHANDLER=1 to see where it died",
            intent="relaunch",
        )
    if did == "sigquit":
        return Diagnosis(
            cause="a child process (scheduler, TP worker or detokenizer) failed and took the server down",
            action="see the first error above this line: that is the real cause",
        )
    if did == "capability_unsupported":
        m = _CAP.search(event.summary)
        cap = m.group(1) if m else "this"
        return Diagnosis(
            cause=f"SGLang (0.5.16+) has no torch symmetric-memory entry for capability {cap}: the feature "
            "is silently off, so all-reduce takes the slower path",
            action="press p to apply the SM120 patch (`symmtui patch apply`) to enable it again",
            intent="patch",
        )
    if did == "multicast_unsupported":
        return Diagnosis(
            cause="this host has no NVLink multicast (a PCIe-only topology): the symmetric-memory fast "
            "path is off",
            action="nothing to fix: the patch removes the crash, but the fast path needs NVLink; expect "
            "ordinary all-reduce speed",
        )
    if did == "process_exit" and "(SIGKILL)" in event.summary:
        return Diagnosis(
            cause="the server was killed with SIGKILL and logged nothing: most often the kernel's OOM killer "
            "(host RAM), or someone ran kill -9",
            action="check `dmesg | grep -i -e oom -e killed` / `journalctl -k`; lower host memory use, then relaunch",
            intent="relaunch",
        )
    sig = _SIGNAL.search(event.summary) if did == "process_exit" else None
    if sig is not None and sig.group(1) in ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE"):
        return Diagnosis(
            cause=f"a native crash ({sig.group(1)}) in a C/CUDA extension or the driver; Python printed no traceback",
            action="rerun with PYTHONFAULTHANDLER=1 to see where it died; check that torch, the CUDA runtime, "
            "FlashInfer and the driver versions match",
            intent="relaunch",
        )
    if did == "process_exit":
        return Diagnosis(
            cause=f"the server {event.summary} and printed no error to the log",
            action="a silent exit is often a native crash or the OOM killer: check `dmesg`, the terminal "
            "the server ran in, and rerun with PYTHONFAULTHANDLER=1",
            intent="relaunch",
        )
    if did == "runtime_error":
        return Diagnosis(cause="the server raised " + event.summary, action="read the traceback below")
    if did == "user_crash":
        return Diagnosis(cause="your crash pattern matched: " + event.summary, action="see the lines around it")
    if did == "traceback":
        return Diagnosis(
            cause="the server raised " + event.summary,
            action="read the traceback below: the last line is the error, the frame above it where it happened",
        )
    return None
