"""What a server's own lines mean in its log: the one table of per-engine readings (no `dialect ==` elsewhere).

A log's dialect is read from the log itself: SGLang's ``[YYYY-MM-DD HH:MM:SS ...]`` record prefix, vLLM's
``INFO MM-DD HH:MM:SS [file.py:N]`` logger header and ``(Worker_TP0 pid=N)`` process prefix
(``core.lineparts``), or a catalogue entry that only one engine prints (its ``engine``). Until one of those
is seen the dialect is unknown, and no reading below applies.

| engine | ``Application startup complete.`` (uvicorn) | requests answered before its own ready line |
|---|---|---|
| sglang | a warm-up step: SGLang sends itself a warm-up request after uvicorn starts, then prints ``The server is fired up and ready to roll!`` (catalogue ``not_ready_on = "sglang"``) | its own warm-up: in a log whose start is there, a request answered (``POST ... 200``) or a ``Prefill batch`` counts as readiness only after the first ``POST ... 200`` (the warm-up's answer: SGLang polls ``GET /get_model_info``, then posts one request to itself); a ``Decode batch`` line (the warm-up decodes too few tokens to log one) and ``GET /health ... 200`` (503 until the warm-up is done) always do |
| vllm | READY: the API server starts last, after the engine cores | none: any request answered proves readiness |
| unknown | READY (a served request or a started app is the best evidence an excerpt holds) | none |
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    """One engine's readings. ``warmup_answer``: the catalogue entry whose first line, in a log whose start is
    there, answers the engine's own warm-up request (None: the engine sends itself none)."""

    name: str
    warmup_answer: str | None = None
    warmup_entries: frozenset[str] = frozenset()
    """Serving entries the warm-up itself produces: before its answer, their lines are the warm-up's."""


DIALECTS: dict[str, Dialect] = {
    "sglang": Dialect("sglang", warmup_answer="serving-request-ok",
                      warmup_entries=frozenset({"serving-request-ok", "serving-request-answered",
                                                "sglang-prefill-batch"})),
    "vllm": Dialect("vllm"),
}
UNKNOWN = Dialect("unknown")


def dialect(name: str | None) -> Dialect:
    """The readings of the engine ``name`` (a log's dialect); the unknown engine's when None or unlisted."""
    return DIALECTS.get(name or "", UNKNOWN)
