"""The rules' data: kinds, actions, one catalogue entry (Rule), one match, the phase names, and the literal a
pattern must contain. No matching here (judge/rules.py) and no loading (tables/catalogue.py)."""

from __future__ import annotations

import re
import warnings
from enum import StrEnum

from msgspec import Struct
from msgspec.structs import asdict

from symmtui.patterns import Match

with warnings.catch_warnings():  # the public names of re's parser are deprecated aliases; still the stable API
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants
    import sre_parse


class Kind(StrEnum):
    """What a matching line means for the bring-up."""

    READY = "ready"
    CRASH = "crash"
    WARNING = "warning"
    PHASE = "phase"
    PROGRESS = "progress"
    INFO = "info"
    HANG = "hang"
    """Not a line rule: what to try when a bring-up hangs in a phase (keyed by ``phase``, one of HANG_PHASES)."""


ACTION_TYPES = ("flag_add", "flag_remove", "env", "upgrade", "patch", "config", "investigate")
ROLES = ("wrapper", "fatal", "announce", "new_run", "generic", "serving")
SCOPES = ("line", "exception", "exit")


class Action(Struct, frozen=True):
    """What to do about a catalogue entry, typed so a front end can carry it out.

    ``type`` is one of ACTION_TYPES: ``flag_add``/``flag_remove`` (``flag``, optional ``value``),
    ``env`` (``env`` = ``value``), ``upgrade`` (``package`` to ``version``), ``patch`` (``patch``, the
    name of a patch symmtui applies), ``config`` (a file to add at ``path``), ``investigate`` (steps
    only). ``text`` is the plain-words instruction shown as "next:".
    """

    type: str
    text: str
    flag: str = ""
    value: str = ""
    env: str = ""
    package: str = ""
    version: str = ""
    patch: str = ""
    path: str = ""

    def as_json(self) -> dict[str, str | None]:
        """Every field, null where it does not apply (the ``fix`` object of ``scan --json``)."""
        return {k: (v or None) for k, v in asdict(self).items()}


class Rule(Struct, frozen=True):
    """One catalogue entry: a line rule (ready, phase, progress, crash, warning, info) and its diagnosis.

    ``pattern`` is a regex searched in the message part of a line (after the rank/timestamp prefix,
    with quoted keyword values of repr'd arguments blanked). ``literals`` are plain substrings of which
    at least one is present in every line the pattern matches (the prefilter keys); empty means
    "derive one from the pattern" or, failing that, "always try the regex". ``context`` (if set) must
    also match the event's whole text (the line, or the traceback) for the entry to apply.
    ``phase`` is the phase this line enters (PHASE/PROGRESS/READY); ``ends`` the phase it closes.
    ``dialect`` marks lines only one server prints (matching one tells the log's engine);
    ``unless_dialect`` (ready rules only) demotes the ready marker to a PHASE of ``phase`` in a log
    of that engine. ``scope``: "line" (log lines), "exception" (only names a traceback's exception),
    "exit" (how a watched process ended). ``roles``: "wrapper" (a consequence: an earlier or later
    primary error is the cause), "fatal" (ends the server even after READY), "announce" (a traceback
    follows on the next line), "new_run" (a server prints it once, at its start), "generic" (names any
    exception of a class: a more specific entry, e.g. the header line's, wins over it), "serving" (a
    request served proves readiness when the log's start is gone; in an SGLang log whose start is
    there, its own "fired up" line is the marker).
    """

    id: str
    kind: Kind
    pattern: str
    summary: str
    phase: str | None = None
    literals: tuple[str, ...] = ()
    ends: str | None = None
    dialect: str | None = None
    unless_dialect: str | None = None
    user: bool = False
    engine: str = "any"
    versions: str = ""
    cause: str = ""
    action: Action | None = None
    intent: str | None = None
    source: tuple[str, ...] = ()
    context: str | None = None
    roles: frozenset[str] = frozenset()
    scope: str = "line"
    origin: str = ""
    follow: str | None = None
    """A death's block (C++ terminate, a Go or Rust panic, a fatal signal's report): the lines after it that still
    belong to it (its what(), its stack, its goroutine dump); one event, however long."""
    detail: str | None = None
    """A regex with a group ``detail``, searched in the block's lines: the first match names the event (what())."""
    detail_after: str | None = None
    """When the death line matches this, the line right after it is its detail (Rust's "panicked at FILE:L:C:")."""
    example: str = ""
    """A line it names, quoted from its source (tests/core/test_rules.py checks that the entry names it)."""

    @property
    def diagnoses(self) -> bool:
        """Whether this entry says what went wrong (it has a cause)."""
        return bool(self.cause)


MAX_COUNT_DIGITS = 18
"""Digits a progress count read from a log may have: more is no count (a line of 400 digits)."""


class RuleMatch(Struct, frozen=True):
    """The first rule (in table order) that matched a line, with the regex match."""

    rule: Rule
    match: Match
    """``re``'s match for a shipped rule, RE2's for a user's (the same methods: symmtui.patterns.Match)."""

    def progress(self) -> tuple[int, int] | None:
        """``(i, n)`` for progress rules (named groups ``i`` and ``n``), else None."""
        groups = self.match.groupdict()
        i, n = groups.get("i"), groups.get("n")
        if i is None or n is None or len(i) > MAX_COUNT_DIGITS or len(n) > MAX_COUNT_DIGITS:
            return None  # no step count of a bring-up has 19 digits (and int() refuses 4,300)
        return int(i), int(n)


# Phase names, in the order a server goes through them (the dashboard and history key on these).
PHASE_STARTING = "launching"
PHASE_INIT_DIST = "init distributed"
PHASE_LOADING = "loading weights"
PHASE_KV = "allocating KV cache"
PHASE_GRAPHS = "capturing CUDA graphs"
PHASE_HTTP = "starting HTTP server"
PHASE_WARMUP = "warm-up"
PHASE_READY = "ready"
PHASE_ORDER: tuple[str, ...] = (
    PHASE_STARTING,
    PHASE_INIT_DIST,
    PHASE_LOADING,
    PHASE_KV,
    PHASE_GRAPHS,
    PHASE_HTTP,
    PHASE_WARMUP,
    PHASE_READY,
)

# Where a hung process stands, named from its stack and the log together (symmtui.stacks.phase); a
# catalogue entry of kind "hang" is keyed by one of these.
HANG_NCCL_INIT = "NCCL init"
HANG_PEERS = "waiting for peers"
HANG_WEIGHTS = "weight loading"
HANG_GRAPHS = "CUDA graph capture"
HANG_COMPILE = "torch.compile"
HANG_WARMUP = "HTTP warm-up"
HANG_PHASES: tuple[str, ...] = (HANG_NCCL_INIT, HANG_PEERS, HANG_WEIGHTS, HANG_GRAPHS, HANG_COMPILE, HANG_WARMUP)


def required_literal(pattern: str) -> str | None:
    """The longest plain substring every match of ``pattern`` must contain, or None if none is certain.

    Read with Python's regex parser (a user pattern, run by RE2, too: where the two syntaxes differ, the
    parser refuses or warns, ``[[:alpha:]]`` a "nested set", and no literal is claimed). A pattern that
    ignores case as a whole (``(?i)...``) has none: its text may be in any case."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # FutureWarning: a POSIX class RE2 reads otherwise
            parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, FutureWarning, DeprecationWarning):
        return None
    if parsed.state.flags & sre_constants.SRE_FLAG_IGNORECASE:
        return None
    return _longest_literal_run(list(parsed.data))


def _longest_literal_run(items: list[tuple[object, object]]) -> str | None:
    best = ""
    run: list[str] = []
    lit = sre_constants.LITERAL
    subpattern = sre_constants.SUBPATTERN
    for op, arg in items:
        if op is lit and isinstance(arg, int):
            run.append(chr(arg))
            continue
        cand = "".join(run)
        if len(cand) > len(best):
            best = cand
        run = []
        if op is subpattern and isinstance(arg, tuple):
            # (group, add_flags, del_flags, pattern): a plain group is required as a whole
            if arg[1] == 0 and arg[2] == 0:
                inner = _longest_literal_run(list(getattr(arg[3], "data", ())))
                if inner and len(inner) > len(best):
                    best = inner
    cand = "".join(run)
    if len(cand) > len(best):
        best = cand
    return best if len(best) >= 3 else None
