"""What a server's own lines mean in its log: the per-engine readings, read from the engine table (no `dialect ==` elsewhere).

A log's dialect is read from the log itself: a record prefix that tells its engine (SGLang's ``[YYYY-MM-DD
HH:MM:SS ...]``, vLLM's ``(Worker_TP0 pid=N)`` and ``INFO MM-DD HH:MM:SS [file.py:N]``: the table's ``tells``
shapes), or a catalogue entry that only one engine prints (its ``engine``). Until one of those is seen the
dialect is unknown, and no reading below applies.

| reading | where in the table | e.g. |
|---|---|---|
| uvicorn's ``Application startup complete.`` is a warm-up step, not READY | the catalogue entry's ``not_ready_on`` | SGLang sends itself a warm-up request after uvicorn starts |
| requests answered before the engine's own ready line are its warm-up's | ``[engine] warmup_answer``, ``warmup_entries`` | SGLang: a ``POST ... 200`` or a ``Prefill batch`` count only after the warm-up's answer |
| a process's crash does not end the server | ``[engine] front`` | vLLM's API server (a request's traceback) |
"""

from __future__ import annotations

from functools import lru_cache

from msgspec import Struct

from symmtui.tables import enginetable


class Dialect(Struct, frozen=True):
    """One engine's readings. ``warmup_answer``: the catalogue entry whose first line, in a log whose start is
    there, answers the engine's own warm-up request (None: the engine sends itself none)."""

    name: str
    warmup_answer: str | None = None
    warmup_entries: frozenset[str] = frozenset()
    """Serving entries the warm-up itself produces: before its answer, their lines are the warm-up's."""
    front: frozenset[str] = frozenset()
    """Process names whose crash does not end a serving server (vLLM's API server answers requests)."""


UNKNOWN = Dialect("unknown")


@lru_cache(maxsize=64)
def dialect(name: str | None) -> Dialect:
    """The readings of the engine ``name`` (a log's dialect); the unknown engine's when None or unlisted."""
    e = enginetable.table().engine(name)
    if e is None:
        return UNKNOWN
    return Dialect(e.name, e.warmup_answer, e.warmup_entries, e.front)


@lru_cache(maxsize=1)
def front_processes() -> frozenset[str]:
    """Every engine's front processes (a record names its process before the log's dialect is known)."""
    return frozenset().union(*(e.front for e in enginetable.table().engines))
