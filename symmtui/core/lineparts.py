"""A log line's parts: the record prefixes servers and launchers put before the message (ranks, time, logger), the
message, and where a second record starts inside one physical line (two ranks' writes joined). The one prefix parser."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple


class Prefix(NamedTuple):
    """The per-record prefix a server or launcher puts before the message.

    ``key`` names the writing process for traceback assembly ("TP3", "DP1 TP3", "rank3", "pid123"); ``label``
    the rank it is for the rank board ("TP3", "DP1 TP3", "rank 3", "RayWorkerWrapper pid 7 @10.0.0.2"; None
    for a process that is no rank: vLLM's API server, an engine core of one rank); ``pid`` where printed.
    """

    key: str | None
    rank: int | None
    ts: float | None
    body: str
    dialect: str | None
    label: str | None = None
    pid: int | None = None
    proc: str | None = None
    """The process's own name where the prefix prints one (vLLM: "APIServer", "EngineCore_DP0", "Worker_TP3")."""


# SGLang: "[2026-11-29 09:40:17 TP0] ", "[2026-11-29 09:40:17 DP1 TP3 EP3] ", "[2026-11-29 09:40:17] ";
# CI runners: "[2025-03-10T15:07:20Z] "
_SGLANG = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?Z?((?: [A-Z][A-Z_]{1,7}\d+)*)\] ?"
)
# RFC 3339 stamps without brackets: GitHub Actions "2025-10-09T04:13:06.6371779Z ", `docker logs -t` and
# `kubectl logs --timestamps` "2024-04-09T17:33:12.238986028Z ", `journalctl -o short-iso` "...T12:00:00+0000 "
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(?:Z|([+-])(\d\d):?(\d\d)) ")
# docker compose service prefix: "vllm-1  | ", "sglang_1 | "
_COMPOSE = re.compile(r"[a-z][\w.-]*[-_]\d+\s+\| ")
# journald's default (short) format: "Mar 28 13:23:08 dev-master-003 kube-apiserver: ", "... sglang[123]: "
_JOURNAL = re.compile(r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d [\w.-]+ "
                      r"[^\s:\[\]]+(?:\[\d+\])?: ")
# What a container runtime or a log collector puts before a server's own line (stacked in any order):
# `docker compose logs` service names, `docker logs -t` / `kubectl logs --timestamps` stamps, journald.
_CONTAINER = re.compile(
    r"(?:[a-z][\w.-]*[-_]\d+\s+\| |\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d) |"
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [^\s:\[\]]+(?:\[\d+\])?: )+"
)
# FastChat-style workers: "2024-04-27 10:13:05 | ERROR | stderr | "
_PIPES = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \| [A-Z]+ \| [\w.-]+ \| ")
# torchrun: "[rank3]: "
_TORCHRUN = re.compile(r"\[rank(\d{1,9})\]: ?")  # (at most 9 digits: int() refuses 4,300; no rank has 10)
# vLLM / Ray worker and engine processes: "(VllmWorkerProcess pid=123) ", "(Worker_TP3 pid=9) ", "(Worker_TP4_EP4
# pid=2532) ", "(VllmWorker TP3 pid=12) ", "(VllmWorker rank=1 pid=236) ", "(EngineCore_DP0 pid=5) ", "(APIServer pid=1) ",
# "(RayWorkerWrapper pid=77, ip=10.0.0.2) "
_VLLM_PROC = re.compile(r"\((\w+?)((?:[ _][A-Z]{2}\d+)*)(?: rank=(\d{1,9}))? pid=(\d{1,9})(?:, ip=([\w.:-]+))?\) ?")
# vLLM logger header after the process prefix: "ERROR 10-29 06:48:05 [file.py:233] " (older releases:
# "ERROR 10-26 11:35:32 registry.py:267] ")
_VLLM_HEAD = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)? (?:\[[^\]]*\]|[\w.-]+:\d+\]) ?"
)
_TP_TAG = re.compile(r"\bTP(\d{1,9})\b")
_LOST_SGR = re.compile(r" ?\[\d{1,2}(?:;\d{1,2})*m ?")
_LEVEL_INITIALS = frozenset("DIWEC")  # DEBUG INFO WARNING ERROR CRITICAL: the vLLM logger header's first letters
_RANK_TAG = re.compile(r"(?<![A-Za-z])((?:DP|PP|TP|EP|CP|NP)\d{1,9})(?!\d)")
_NOT_RANKS = frozenset({"APIServer", "EngineCore", "Worker", "VllmWorker"})
"""vLLM process names that are no rank without a tag (the API server; an engine core of one rank)."""
# A second record's prefix inside a physical line: concurrent writers to one pipe joined two records
# ("...mem usage=6.00 GB.[2026-12-01 08:58:23 TP2] Load weight end. ..."). Only these shapes, and only inside a
# line that itself starts with a record prefix: a message that quotes a stamp is not split.
_MID_RECORD = re.compile(
    r"\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z][A-Z_]{1,7}\d+)*\] |\[rank\d+\]: |"
    r"\(\w+(?:[ _][A-Z]{2}\d+)*(?: rank=\d+)? pid=\d+(?:, ip=[\w.:-]+)?\) (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
)
MAX_RECORDS = 8  # records split off one physical line at most (the rest stays in the last one)


def rank_tags(text: str) -> str:
    """The rank tags in ``text`` joined by spaces: "DP1 TP3"."""
    return " ".join(_RANK_TAG.findall(text))


@lru_cache(maxsize=4096)
def _seconds(stamp: tuple[str, ...]) -> int | None:
    """Epoch seconds of a (year, month, day, hour, minute, second) stamp (cached: a log repeats its
    seconds thousands of times in a burst)."""
    import calendar  # here: ~1.5 ms to import (datetime), paid on the first stamp, not at every start

    try:
        return calendar.timegm((*(int(x) for x in stamp), 0, 0, 0))
    except (ValueError, OverflowError):
        return None


def _timegm(m: re.Match[str]) -> float | None:
    whole = _seconds(m.group(1, 2, 3, 4, 5, 6))
    if whole is None:
        return None
    frac = m.group(7) if (m.re.groups or 0) >= 7 else None
    if (m.re.groups or 0) >= 10 and m.group(8):  # an RFC 3339 offset: "+02:00" is 2 h ahead of UTC
        sign = 1 if m.group(8) == "+" else -1
        whole -= sign * (int(m.group(9)) * 3600 + int(m.group(10)) * 60)
    return whole + (float("0." + frac) if frac else 0.0)


def container_body(plain: str) -> str:
    """``plain`` without the prefixes a container runtime or log collector adds (compose service names,
    `docker logs -t` / `kubectl logs --timestamps` stamps, journald's "Mon DD HH:MM:SS host unit[pid]: "):
    the server's own line, as it wrote it."""
    m = _CONTAINER.match(plain)
    return plain[m.end():] if m is not None else plain


# The last line split: the engine splits a matched line more than once (the rule match, then its event).
_last: tuple[str, Prefix] = ("", Prefix(None, None, None, "", None))


def split_prefix(plain: str) -> Prefix:
    """Split known rank/timestamp prefixes off a line (SGLang, torchrun, vLLM, CI, compose, `docker logs -t`,
    `kubectl logs --timestamps` and journald shapes; they stack)."""
    global _last
    last = _last  # one read: another thread may replace it meanwhile (Prefix is immutable)
    if last[0] == plain:
        return last[1]
    pre = _split(plain)
    _last = (plain, pre)
    return pre


_BRACKETS: dict[str, tuple[float | None, str | None, str | None, int | None, str | None]] = {}
_MAX_BRACKETS = 4096


def _bracket(m: re.Match[str]) -> tuple[float | None, str | None, str | None, int | None, str | None]:
    """(ts, dialect, key, rank, label) of an SGLang-shaped "[YYYY-MM-DD HH:MM:SS TP3] " prefix, cached by its text
    (a flood repeats each rank's prefix, its stamp too, many times a second)."""
    text = m.group(0)
    got = _BRACKETS.get(text)
    if got is not None:
        return got
    ts = _timegm(m)
    tags = m.group(8).strip()
    dialect = key = label = None
    rank = None
    if not text.rstrip().endswith("Z]") and text[11] == " ":
        dialect = "sglang"  # SGLang's own "[YYYY-MM-DD HH:MM:SS]" stamp (vLLM writes "INFO MM-DD ...")
    if tags:
        key = tags
        t = _TP_TAG.search(tags)
        rank = int(t.group(1)) if t else None
        dialect = "sglang"
        label = rank_tags(tags) or None
    if len(_BRACKETS) >= _MAX_BRACKETS:
        _BRACKETS.clear()
    got = _BRACKETS[text] = (ts, dialect, key, rank, label)
    return got


def _split(plain: str) -> Prefix:
    key: str | None = None
    rank: int | None = None
    ts: float | None = None
    dialect: str | None = None
    label: str | None = None
    pid: int | None = None
    proc: str | None = None
    pos = 0
    if plain[:1] == ">" and plain[1:2] in (" ", ""):  # a log pasted as a Markdown quote (an issue's "> " lines)
        pos = len(plain[:2])
    m = _LOST_SGR.match(plain, pos) if plain[pos : pos + 1] in (" ", "[") else None
    if m is not None:  # Ray's colour codes pasted with their escape byte lost: " [36m(RayWorkerVllm pid=5085) [0m "
        pos = m.end()
    outer = True  # only container layers (stamps, compose names, journald) so far: more of them may follow
    for _ in range(6):
        c = plain[pos : pos + 1]  # each shape starts with its own kind of character: try only those that may
        if c == "[":
            m = _SGLANG.match(plain, pos)
            if m is not None:
                bts, bdialect, bkey, brank, blabel = _bracket(m)
                ts = bts if bts is not None else ts
                dialect = bdialect or dialect
                if bkey is not None:
                    key, rank, label = bkey, brank if brank is not None else rank, blabel or label
                pos = m.end()
                outer = False
                continue
            m = _TORCHRUN.match(plain, pos)
            if m is not None:
                rank = int(m.group(1))
                key = f"rank{rank}"
                label = label or f"rank {rank}"
                pos = m.end()
                outer = False
                continue
        elif c == "(":
            m = _VLLM_PROC.match(plain, pos)
            if m is not None:
                name, tagtext, nrank, pid = m.group(1), m.group(2), m.group(3), int(m.group(4))
                tags = rank_tags(tagtext) or rank_tags(name.replace("_", " "))
                t = _TP_TAG.search(tags)
                if t is not None:
                    rank = int(t.group(1))
                elif nrank is not None:
                    rank = int(nrank)
                key = f"pid{pid}"
                proc = name + tagtext.replace(" ", "_")
                if tags:
                    label = tags
                elif nrank is not None:
                    label = f"rank {nrank}"
                elif name not in _NOT_RANKS and not name.startswith("EngineCore"):
                    label = f"{name} pid {pid}" + (f" @{m.group(5)}" if m.group(5) else "")
                dialect = "vllm"
                pos = m.end()
                h = _VLLM_HEAD.match(plain, pos)
                if h is not None:
                    pos = h.end()
                outer = False
                continue
        elif c in _LEVEL_INITIALS:
            h = _VLLM_HEAD.match(plain, pos)
            if h is not None:
                dialect = "vllm"
                pos = h.end()
                outer = False
                continue
        if outer and c:
            m = _ISO.match(plain, pos) or _PIPES.match(plain, pos) if c.isdigit() else None
            if m is not None:
                ts = _timegm(m) if ts is None else ts
                pos = m.end()
                continue
            m = _COMPOSE.match(plain, pos) or _JOURNAL.match(plain, pos) if c.isalpha() else None
            if m is not None:
                pos = m.end()
                continue
        break
    return Prefix(key, rank, ts, plain[pos:] if pos else plain, dialect, label, pid, proc)


def split_records(plain: str) -> list[str]:
    """The records of one physical line: itself, or (two writers' records joined on it) each record's text.

    A second record starts where a record prefix of the SGLang, torchrun or vLLM shape begins inside a line
    that itself starts with one; everything before it belongs to the first record."""
    if not _may_join(plain):
        return [plain]
    m = _MID_RECORD.search(plain, 1)
    if m is None:
        return [plain]
    first = split_prefix(plain)
    start = len(plain) - len(first.body)
    if (first.key is None and first.ts is None) or m.start() <= start:
        m = _MID_RECORD.search(plain, start + 1) if first.key is not None or first.ts is not None else None
        if m is None:
            return [plain]
    out: list[str] = []
    at = 0
    while m is not None and len(out) < MAX_RECORDS - 1:
        out.append(plain[at:m.start()])
        at = m.start()
        m = _MID_RECORD.search(plain, at + 1)
    out.append(plain[at:])
    return out


def _may_join(plain: str) -> bool:
    """Whether a second record prefix may begin inside ``plain`` (cheap: most lines hold no "[" + digit or
    "[rank" after their start, nor a second " pid="): the regex then runs on the few that may."""
    i = plain.find("[", 1)
    while i >= 0:
        c = plain[i + 1 : i + 2]
        if c.isdigit() or plain.startswith("rank", i + 1):
            return True
        i = plain.find("[", i + 1)
    return plain.count(" pid=") > 1


_SOURCES: dict[str, tuple[str | None, str | None, int | None]] = {}
_MAX_SOURCES = 4096


def record_source(plain: str) -> tuple[str | None, str | None, int | None]:
    """(key, label, pid) of a record's prefix, as ``split_prefix`` reads them, without the rest of its work:
    cached by the prefix's own text (a flood repeats each rank's prefix, its stamp too, many times a second).
    The rank board asks this of every record."""
    end = -1
    if plain[:1] == "[":
        end = plain.find("] ", 1, 120)
    elif plain[:1] == "(":
        end = plain.find(") ", 1, 120)
    if end < 0:
        pre = split_prefix(plain)
        return pre.key, pre.label, pre.pid
    head = plain[: end + 2]
    key = head
    if head[5:6] == "-" and head[1:5].isdigit():  # "[YYYY-MM-DD HH:MM:SS(.fff) TP3] ": the stamp names no source
        key = head[20:].lstrip(".,0123456789")
    got = _SOURCES.get(key)
    if got is None:
        pre = _split(head)
        if len(_SOURCES) >= _MAX_SOURCES:
            _SOURCES.clear()
        got = _SOURCES[key] = (pre.key, pre.label, pre.pid)
    return got
