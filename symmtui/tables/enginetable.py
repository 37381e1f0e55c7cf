"""The engine table: ``symmtui/engines/*.toml`` (one data file per serving engine) read, checked and compiled.

An engine file says how the engine's records start (prefix shapes with named groups), which of its lines are
request or access lines (their client content is never a record), how to tell it from a command line, a stack
and a log, its package for versions and its warm-up; its ``[[entry]]`` tables (ready and phase markers,
wrappers, deaths) are catalogue entries, read by ``tables.catalogue``. ``any.toml`` holds what every log may carry
(container and collector layers, torchrun's rank prefix, uvicorn's lines). docs/catalogue.md, "How to add an engine".
The parsed table is cached like the catalogue (``tables.catcache``): a start reads it back with ``marshal``.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from msgspec import Struct

from symmtui.errors import UserError
from symmtui.tables import catcache
from symmtui.tables.ruletypes import required_literal

with warnings.catch_warnings():  # the public names of re's parser are deprecated aliases; still the stable API
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants
    import sre_parse

FOLDER = Path(__file__).resolve().parent.parent / "engines"
"""The folder of the package symmtui.engines: the shipped engine files."""
SHARED = "any"
"""The file (and the catalogue's engine name) of what every log may carry: no engine."""
LAYERS = ("outer", "record", "decor")
LEVELS = ("fatal", "error", "warning", "info", "debug")
PREFIX_GROUPS = frozenset({"Y", "M", "D", "h", "m", "s", "frac", "tzsign", "tzh", "tzm", "tags", "rank", "pid",
                           "proc", "ip", "level"})
"""The named groups a prefix shape may capture (docs/catalogue.md says what each means)."""
_FILE_KEYS = frozenset({"engine", "prefix", "request", "entry"})
_ENGINE_KEYS = frozenset({"name", "title", "package", "programs", "code", "source", "ready", "warmup_answer",
                          "warmup_entries", "front", "not_ranks"})
_ENGINE_NEEDS = ("name", "title", "package", "programs", "code", "source", "ready")
_PREFIX_KEYS = frozenset({"layer", "pattern", "example", "message", "tells", "joins", "levels", "suffix"})
_REQUEST_KEYS = frozenset({"pattern", "example", "anywhere", "continues", "literals"})
_SOURCE = re.compile(r"[\w.-]+/[\w.-]+#\d+")
_NAME = re.compile(r"[a-z][a-z0-9]{1,15}")


class EngineTableError(UserError):
    """A bad engine file: one line naming the file and the key."""


class Engine(Struct, frozen=True):
    """One serving engine: its names, how to tell it from a command line or a stack, its package, its warm-up."""

    name: str
    title: str
    package: str
    """The Python distribution whose version a bring-up records ("" for an engine that is no Python package)."""
    programs: tuple[str, ...]
    """Regexes over a command line that name this engine's server."""
    code: tuple[str, ...]
    """Folder names of its code: a stack frame in ``.../NAME/...`` is this engine's."""
    source: tuple[str, ...]
    ready: tuple[str, ...] = ()
    """The catalogue entries (its own or shared ones, e.g. uvicorn's) whose lines say the server is ready."""
    warmup_answer: str | None = None
    """The catalogue entry whose first line answers the engine's own warm-up request (None: it sends none)."""
    warmup_entries: frozenset[str] = frozenset()
    """Serving entries the warm-up itself produces: before its answer, their lines are the warm-up's."""
    front: frozenset[str] = frozenset()
    """Process names whose crash is a request's, not the server's end (vLLM's API server)."""
    not_ranks: tuple[str, ...] = ()
    """Process names (``Name*``: a prefix) that are no rank without a rank tag."""


class PrefixShape(Struct, frozen=True):
    """How some records start: a regex matched at a record's start, its named groups read as PREFIX_GROUPS."""

    engine: str
    layer: str
    pattern: str
    example: str
    """A prefix of this shape as a log prints it (the record's message after it: ``message``)."""
    tells: bool = False
    """A record with this prefix tells its engine (the log's dialect)."""
    joins: str | None = None
    """Where a second record of this shape starts inside one physical line (concurrent writers joined them)."""
    levels: tuple[tuple[str, str], ...] = ()
    """The ``level`` group's values read as LEVELS ("F" -> "fatal")."""
    suffix: str | None = None
    """A regex searched at the end of the record's message for what the prefix does not say (``rank=3``)."""
    first: frozenset[str] | None = None
    """The characters a match can start with (``first_chars``; None: almost any), derived when the file is read."""
    groups: frozenset[str] = frozenset()
    """The pattern's named groups, derived likewise (the cache keeps both: a start compiles no regex to know them)."""
    join: tuple[str, frozenset[str] | None, str] | None = None
    """``join_hint(joins)``, derived likewise."""


class RequestShape(Struct, frozen=True):
    """A request or access line: what follows the match (or its ``content`` group) is the client's content."""

    engine: str
    pattern: str
    example: str
    literals: tuple[str, ...]
    anywhere: bool = False
    """Searched anywhere in the message (after a prefix no shape knows), not only at its start."""
    continues: bool = False
    """The content goes on over the following lines that carry no record prefix (a prompt with real newlines)."""


class Table(Struct, frozen=True):
    """The whole table: the engines (name order), every prefix shape (the engines' in file order, then the
    shared ones) and every request shape."""

    engines: tuple[Engine, ...]
    prefixes: tuple[PrefixShape, ...]
    requests: tuple[RequestShape, ...]

    def names(self) -> tuple[str, ...]:
        """The engines' names, in file order."""
        return tuple(e.name for e in self.engines)

    def engine(self, name: str | None) -> Engine | None:
        """The engine called ``name``, or None."""
        return next((e for e in self.engines if e.name == name), None)

    def by_command(self, command: str) -> str | None:
        """The engine a command line runs (its ``programs``), or None."""
        for e in self.engines:
            if any(re.search(p, command) for p in e.programs):
                return e.name
        return None

    def by_path(self, filename: str) -> str | None:
        """The engine whose code a stack frame's file is, or None."""
        parts = re.split(r"[/\\]", filename)
        for e in self.engines:
            if any(c in parts[:-1] for c in e.code):
                return e.name
        return None

    def packages(self) -> tuple[str, ...]:
        """The engines' Python packages (the ones that are one)."""
        return tuple(e.package for e in self.engines if e.package)


def _fail(where: str, key: str, problem: str) -> EngineTableError:
    return EngineTableError(f"engine file {where}: {key}: {problem}"[:400])


def _strs(where: str, key: str, value: Any, *, required: bool = False) -> list[str]:
    if value is None:
        if required:
            raise _fail(where, key, "is required")
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(where, key, "must be a list of strings")
    return list(value)


def _str(where: str, key: str, value: Any, *, required: bool = False) -> str:
    if value is None:
        if required:
            raise _fail(where, key, "is required")
        return ""
    if not isinstance(value, str):
        raise _fail(where, key, f"must be a string, not {type(value).__name__}")
    return value


def _bool(where: str, key: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _fail(where, key, "must be true or false")
    return value


def _regex(where: str, key: str, pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise _fail(where, key, "is required")
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise _fail(where, key, f"bad regular expression {pattern[:80]!r}: {exc}") from None
    if rx.match("") is not None:
        raise _fail(where, key, f"{pattern[:80]!r} matches an empty text: make it specific")
    return rx


def _only(where: str, table: Any, keys: frozenset[str], what: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise _fail(where, what, "must be a table")
    for k in table:
        if k not in keys:
            raise _fail(where, f"{what}.{k}", f"unknown key (known: {', '.join(sorted(keys))})")
    return table


def parse_file(name: str, text: str) -> dict[str, Any]:
    """One engine file's text -> plain data (what the cache keeps); a bad key raises EngineTableError."""
    import tomllib  # here: a start that reads the table from its cache parses no TOML

    where = f"symmtui/engines/{name}.toml"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(where, "toml", str(exc)) from None
    for k in data:
        if k not in _FILE_KEYS:
            raise _fail(where, k, f"unknown table (known: {', '.join(sorted(_FILE_KEYS))})")
    shared = name == SHARED
    for k in ("engine",) if shared else ("engine", "prefix", "request", "entry"):
        if k not in data:
            raise _fail(where, k, f"is required ([{k}]" + ("" if k == "engine" else f" or [[{k}]] tables, or {k} = []")
                        + "): docs/catalogue.md, How to add an engine")
    eng = _only(where, data["engine"], _ENGINE_KEYS, "engine")
    if _str(where, "engine.name", eng.get("name"), required=True) != name:
        raise _fail(where, "engine.name", f"must be {name!r}, the file's name")
    if not shared:
        if not _NAME.fullmatch(name):
            raise _fail(where, "engine.name", "2-16 characters of a-z and 0-9, starting with a letter")
        for k in _ENGINE_NEEDS:
            if k not in eng:
                raise _fail(where, f"engine.{k}", "is required (docs/catalogue.md, How to add an engine)")
        _str(where, "engine.title", eng["title"], required=True)
        _str(where, "engine.package", eng["package"])
        if not _strs(where, "engine.programs", eng["programs"], required=True):
            raise _fail(where, "engine.programs", "needs at least one regex naming the engine's server command")
        for i, p in enumerate(eng["programs"]):
            _regex(where, f"engine.programs[{i}]", p)
        _strs(where, "engine.code", eng["code"])
        srcs = _strs(where, "engine.source", eng["source"], required=True)
        if not srcs or not all(_SOURCE.fullmatch(s) for s in srcs):
            raise _fail(where, "engine.source", "needs its public sources as owner/repo#N")
        _str(where, "engine.warmup_answer", eng.get("warmup_answer"))
        for k in ("warmup_entries", "front", "not_ranks"):
            _strs(where, f"engine.{k}", eng.get(k))
        if not _strs(where, "engine.ready", eng["ready"], required=True):
            raise _fail(where, "engine.ready", "needs the ids of the entries that say it is ready (its own, or uvicorn's)")
    prefixes = data.get("prefix", [])
    if not isinstance(prefixes, list):
        raise _fail(where, "prefix", "must be an array of tables ([[prefix]])")
    for i, raw in enumerate(prefixes):
        _check_prefix(where, f"prefix[{i}]", _only(where, raw, _PREFIX_KEYS, f"prefix[{i}]"))
        raw["_first"] = first_chars(raw["pattern"])  # derived (a leading "_": never a key of the file)
        raw["_groups"] = frozenset(re.compile(raw["pattern"]).groupindex)
        raw["_join"] = join_hint(raw["joins"]) if raw.get("joins") else None
    requests = data.get("request", [])
    if not isinstance(requests, list):
        raise _fail(where, "request", "must be an array of tables ([[request]])")
    for i, raw in enumerate(requests):
        raw["literals"] = _check_request(where, f"request[{i}]", _only(where, raw, _REQUEST_KEYS, f"request[{i}]"))
    return {"engine": eng, "prefix": prefixes, "request": requests}


def _check_prefix(where: str, key: str, raw: dict[str, Any]) -> None:
    layer = _str(where, f"{key}.layer", raw.get("layer"), required=True)
    if layer not in LAYERS:
        raise _fail(where, f"{key}.layer", f"{layer[:20]!r} is not one of {', '.join(LAYERS)}")
    rx = _regex(where, f"{key}.pattern", _str(where, f"{key}.pattern", raw.get("pattern"), required=True))
    for g in rx.groupindex:
        if g not in PREFIX_GROUPS:
            raise _fail(where, f"{key}.pattern", f"unknown group {g!r} (known: {', '.join(sorted(PREFIX_GROUPS))})")
    example = _str(where, f"{key}.example", raw.get("example"), required=True)
    message = _str(where, f"{key}.message", raw.get("message"))
    m = rx.match(example)
    if m is None or example[m.end():] != message or not m.end():
        raise _fail(where, f"{key}.example", f"{example[:60]!r} is not matched whole by the pattern"
                    + (f" up to its message {message[:40]!r}" if message else ""))
    _bool(where, f"{key}.tells", raw.get("tells"))
    if raw.get("joins") is not None:
        _regex(where, f"{key}.joins", _str(where, f"{key}.joins", raw["joins"]))
    if raw.get("suffix") is not None:
        srx = _regex(where, f"{key}.suffix", _str(where, f"{key}.suffix", raw["suffix"]))
        if set(srx.groupindex) - {"rank"}:
            raise _fail(where, f"{key}.suffix", "may name only the group 'rank'")
    levels = raw.get("levels") or {}
    if not isinstance(levels, dict) or not all(isinstance(v, str) and v in LEVELS for v in levels.values()):
        raise _fail(where, f"{key}.levels", f"must be a table of the level group's values to one of {', '.join(LEVELS)}")
    if levels and "level" not in rx.groupindex:
        raise _fail(where, f"{key}.levels", "the pattern has no group 'level'")


def _check_request(where: str, key: str, raw: dict[str, Any]) -> list[str]:
    rx = _regex(where, f"{key}.pattern", _str(where, f"{key}.pattern", raw.get("pattern"), required=True))
    if set(rx.groupindex) - {"content"}:
        raise _fail(where, f"{key}.pattern", "may name only the group 'content'")
    example = _str(where, f"{key}.example", raw.get("example"), required=True)
    anywhere = _bool(where, f"{key}.anywhere", raw.get("anywhere"))
    _bool(where, f"{key}.continues", raw.get("continues"))
    if (rx.search(example) if anywhere else rx.match(example)) is None:
        raise _fail(where, f"{key}.example", f"{example[:60]!r} is not matched by the pattern")
    lits = _strs(where, f"{key}.literals", raw.get("literals"))
    if not lits:
        derived = required_literal(rx.pattern)
        if derived is None:
            raise _fail(where, f"{key}.literals", "the pattern holds no plain text of 3+ characters: give literals")
        lits = [derived]
    if not any(lit in example for lit in lits):
        raise _fail(where, f"{key}.literals", "none of them is in the example")
    return lits


def _files() -> list[Path]:
    return sorted((f for f in FOLDER.iterdir() if f.suffix == ".toml"), key=lambda f: (f.stem == SHARED, f.stem))


def parse_all() -> list[tuple[str, dict[str, Any]]]:
    """Every shipped engine file parsed: (name, data), the engines in name order, the shared file last."""
    return [(f.stem, parse_file(f.stem, f.read_text(encoding="utf-8"))) for f in _files()]


def engine_files() -> list[tuple[str, str]]:
    """The shipped engine files, (name, text), in table order (the catalogue reads their ``[[entry]]`` tables)."""
    return [(f.stem, f.read_text(encoding="utf-8")) for f in _files()]


@lru_cache(maxsize=1)
def table() -> Table:
    """The shipped table, read once (from the cache when it was made from these files)."""
    data = catcache.load_data(FOLDER, [*_files(), Path(__file__)], parse_all, "engines")
    return build(data)


def build(data: list[tuple[str, dict[str, Any]]]) -> Table:
    """The Table of parsed files (``parse_all``'s shape)."""
    engines: list[Engine] = []
    prefixes: list[PrefixShape] = []
    requests: list[RequestShape] = []
    for name, d in data:
        e = d["engine"]
        if name != SHARED:
            engines.append(Engine(
                name=name, title=e["title"], package=e["package"], programs=tuple(e["programs"]),
                code=tuple(e["code"]), source=tuple(e["source"]), ready=tuple(e["ready"]), warmup_answer=e.get("warmup_answer") or None,
                warmup_entries=frozenset(e.get("warmup_entries", ())), front=frozenset(e.get("front", ())),
                not_ranks=tuple(e.get("not_ranks", ()))))
        for p in d["prefix"]:
            prefixes.append(PrefixShape(
                engine=name, layer=p["layer"], pattern=p["pattern"], example=p["example"][:len(p["example"]) - len(p.get("message", ""))],
                tells=bool(p.get("tells")) and name != SHARED, joins=p.get("joins"),
                levels=tuple(sorted((p.get("levels") or {}).items())), suffix=p.get("suffix"),
                first=p.get("_first"), groups=p.get("_groups", frozenset()), join=p.get("_join")))
        for r in d["request"]:
            requests.append(RequestShape(
                engine=name, pattern=r["pattern"], example=r["example"], literals=tuple(r["literals"]),
                anywhere=bool(r.get("anywhere")), continues=bool(r.get("continues"))))
    return Table(tuple(engines), tuple(prefixes), tuple(requests))


def names() -> tuple[str, ...]:
    """The names a catalogue entry's ``engine`` may take: "any" and every engine of the table."""
    return (SHARED, *table().names())


def first_chars(pattern: str) -> frozenset[str] | None:
    """The characters a match of ``pattern`` can start with (ASCII classes read as ASCII), or None when it may
    start with almost anything (or with nothing): the prefix parser tries a shape only on lines starting so."""
    try:
        chars, empty = _first(list(sre_parse.parse(pattern).data))
    except (re.error, ValueError):
        return None
    return None if chars is None or empty else frozenset(chars)


def join_hint(pattern: str) -> tuple[str, frozenset[str] | None, str] | None:
    """What a match of ``pattern`` needs, cheap to test before the regex runs: (its first character, the
    characters its second can be or None for almost any, its longest run of literal characters). None when it
    does not start with one literal character. A joined record's prefix is sought in every line: most lines hold
    none of these, and the regex then need not run."""
    c = sre_constants
    try:
        items: list[tuple[Any, Any]] = list(sre_parse.parse(pattern).data)
    except (re.error, ValueError):
        return None
    if not items or items[0][0] is not c.LITERAL:
        return None
    second, empty = _first(items[1:])
    runs, run = [""], ""
    for op, arg in items:
        run = run + chr(arg) if op is c.LITERAL else ""
        runs.append(run)
    return chr(items[0][1]), None if second is None or empty else frozenset(second), max(runs, key=len)


_DIGITS = frozenset("0123456789")


def _first(items: list[tuple[Any, Any]]) -> tuple[set[str] | None, bool]:
    """(first characters, may match empty) of a parsed sequence."""
    acc: set[str] = set()
    for op, arg in items:
        chars, empty = _first_item(op, arg)
        if chars is None:
            return None, False
        acc |= chars
        if not empty:
            return acc, False
    return acc, True


def _first_item(op: Any, arg: Any) -> tuple[set[str] | None, bool]:
    c = sre_constants
    if op is c.LITERAL:
        return {chr(arg)}, False
    if op is c.AT:
        return set(), True
    if op is c.IN:
        out: set[str] = set()
        for iop, iarg in arg:
            if iop is c.LITERAL:
                out.add(chr(iarg))
            elif iop is c.RANGE and iarg[1] - iarg[0] < 256:
                out.update(chr(x) for x in range(iarg[0], iarg[1] + 1))
            elif iop is c.CATEGORY and iarg is c.CATEGORY_DIGIT:
                out |= _DIGITS
            elif iop is c.CATEGORY and iarg is c.CATEGORY_SPACE:
                out.update(" \t")
            else:
                return None, False
        return out, False
    if op is c.BRANCH:
        out = set()
        empty = False
        for branch in arg[1]:
            chars, e = _first(list(branch.data))
            if chars is None:
                return None, False
            out |= chars
            empty = empty or e
        return out, empty
    if op is c.SUBPATTERN:
        return _first(list(arg[3].data))
    if op in (c.MAX_REPEAT, c.MIN_REPEAT):
        lo, _hi, sub = arg
        chars, empty = _first(list(sub.data))
        return chars, empty or lo == 0
    return None, False
