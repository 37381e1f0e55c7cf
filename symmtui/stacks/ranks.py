"""The rank of a server process: from its title (setproctitle), its environment, or the log's pid prefix."""

from __future__ import annotations

import re
from collections.abc import Mapping

from symmtui.judge.ranks import rank_tags
from symmtui.proc.pidwatch import environ

# SGLang: "sglang::scheduler_DP1_TP3"; vLLM: "VLLM::Worker_TP3", "VLLM::EngineCore_DP0", "VllmWorker TP3"
_TITLE = re.compile(r"^(?:sglang::\w+|VLLM::\w+|VllmWorker(?: [A-Z]{2}\d+)+|ray::\w+)")


def rank_from_title(cmdline: str) -> str | None:
    """"TP3" / "DP1 TP3" from a process title that SGLang or vLLM set, else None."""
    m = _TITLE.match(cmdline)
    if m is None:
        return None
    tags = rank_tags(m.group(0).replace("_", " "))
    return tags or None


def rank_from_env(environ: bytes) -> str | None:
    """"rank 3" from torchrun's RANK (or LOCAL_RANK) in a /proc/PID/environ blob, else None."""
    found: dict[str, str] = {}
    for item in environ.split(b"\0"):
        k, _, v = item.partition(b"=")
        if k in (b"RANK", b"LOCAL_RANK"):
            found[k.decode()] = v.decode(errors="replace")
    value = found.get("RANK") or found.get("LOCAL_RANK")
    return f"rank {value}" if value is not None and value.isdigit() else None


def rank_of(pid: int, cmdline: str, log_pids: Mapping[int, str]) -> str | None:
    """The rank label of one process: its title first, then the log's "(… TP3 pid=P)", then its env."""
    return rank_from_title(cmdline) or log_pids.get(pid) or rank_from_env(environ(pid) or b"")
