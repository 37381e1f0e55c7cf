"""A log line's parts: the prefix servers and launchers put before the message (ranks, time, logger), and the message."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Prefix:
    """The per-line prefix a server or launcher puts before the message."""

    key: str | None
    rank: int | None
    ts: float | None
    body: str
    dialect: str | None


# SGLang: "[2026-11-29 09:40:17 TP0] ", "[2026-11-29 09:40:17 DP1 TP3 EP3] ", "[2026-11-29 09:40:17] ";
# CI runners: "[2025-03-10T15:07:20Z] "
_SGLANG = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?Z?((?: (?:[A-Z]{2,3}\d+))*)\] ?"
)
# GitHub Actions / journald-style ISO stamps without brackets: "2025-10-09T04:13:06.6371779Z "
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?Z ")
# docker compose service prefix: "vllm-1  | ", "sglang_1 | "
_COMPOSE = re.compile(r"[a-z][\w.-]*[-_]\d+\s+\| ")
# FastChat-style workers: "2024-04-27 10:13:05 | ERROR | stderr | "
_PIPES = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \| [A-Z]+ \| [\w.-]+ \| ")
# torchrun: "[rank3]: "
_TORCHRUN = re.compile(r"\[rank(\d+)\]: ?")
# vLLM worker / engine processes: "(VllmWorkerProcess pid=123) ", "(Worker_TP3 pid=9) ", "(APIServer pid=1) "
_VLLM_PROC = re.compile(r"\((\w+?)(?:_TP(\d+))?(?:_\w+)? pid=(\d+)(?:, ip=[\d.]+)?\) ?")
# vLLM logger header after the process prefix: "ERROR 10-29 06:48:05 [file.py:233] " (older releases:
# "ERROR 10-26 11:35:32 registry.py:267] ")
_VLLM_HEAD = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)? (?:\[[^\]]*\]|[\w.-]+:\d+\]) ?"
)
_TP_TAG = re.compile(r"\bTP(\d+)\b")


@lru_cache(maxsize=4096)
def _seconds(stamp: tuple[str, ...]) -> int | None:
    """Epoch seconds of a (year, month, day, hour, minute, second) stamp (cached: a log repeats its
    seconds thousands of times in a burst)."""
    try:
        return calendar.timegm((*(int(x) for x in stamp), 0, 0, 0))
    except (ValueError, OverflowError):
        return None


def _timegm(m: re.Match[str]) -> float | None:
    whole = _seconds(m.group(1, 2, 3, 4, 5, 6))
    if whole is None:
        return None
    frac = m.group(7) if (m.re.groups or 0) >= 7 else None
    return whole + (float("0." + frac) if frac else 0.0)


# The last line split: the engine splits a matched line more than once (the rule match, then its event).
_last: tuple[str, Prefix] = ("", Prefix(None, None, None, "", None))


def split_prefix(plain: str) -> Prefix:
    """Split known rank/timestamp prefixes off a line (SGLang, torchrun, vLLM, CI and compose shapes; they stack)."""
    global _last
    last = _last  # one read: another thread may replace it meanwhile (Prefix is immutable)
    if last[0] == plain:
        return last[1]
    pre = _split(plain)
    _last = (plain, pre)
    return pre


def _split(plain: str) -> Prefix:
    key: str | None = None
    rank: int | None = None
    ts: float | None = None
    dialect: str | None = None
    pos = 0
    for _ in range(4):
        m = _SGLANG.match(plain, pos)
        if m is not None:
            ts = _timegm(m)
            tags = m.group(8).strip()
            if not m.group(0).rstrip().endswith("Z]") and m.group(0)[11] == " ":
                dialect = "sglang"  # SGLang's own "[YYYY-MM-DD HH:MM:SS]" stamp (vLLM writes "INFO MM-DD ...")
            if tags:
                key = tags
                t = _TP_TAG.search(tags)
                rank = int(t.group(1)) if t else rank
                dialect = "sglang"
            pos = m.end()
            continue
        m = _TORCHRUN.match(plain, pos)
        if m is not None:
            rank = int(m.group(1))
            key = f"rank{rank}"
            pos = m.end()
            continue
        m = _VLLM_PROC.match(plain, pos)
        if m is not None:
            if m.group(2) is not None:
                rank = int(m.group(2))
            key = f"pid{m.group(3)}"
            dialect = "vllm"
            pos = m.end()
            h = _VLLM_HEAD.match(plain, pos)
            if h is not None:
                pos = h.end()
            continue
        h = _VLLM_HEAD.match(plain, pos)
        if h is not None:
            dialect = "vllm"
            pos = h.end()
            continue
        if pos == 0:
            m = _ISO.match(plain) or _PIPES.match(plain)
            if m is not None:
                ts = _timegm(m)
                pos = m.end()
                continue
            m = _COMPOSE.match(plain)
            if m is not None:
                pos = m.end()
                continue
        break
    return Prefix(key, rank, ts, plain[pos:] if pos else plain, dialect)
