"""The catalogue loader: TOML entries (shipped, the user's XDG file, a profile's [rules]) checked and turned into Rules."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symmtui import boundary, paths, patterns
from symmtui.errors import UserError
from symmtui.patterns import MAX_PATTERN, PatternError, compile_user, matches_every_line
from symmtui.tables import catcache, enginetable, ruletypes
from symmtui.tables.enginetable import SHARED, engine_files
from symmtui.tables.ruletypes import (
    ACTION_TYPES,
    HANG_PHASES,
    ROLES,
    SCOPES,
    Action,
    Kind,
    Rule,
    required_literal,
)

if TYPE_CHECKING:
    from symmtui.patterns import UserPattern

    Searcher = re.Pattern[str] | UserPattern

INTENTS = ("patch", "relaunch", "stop")
# Kinds a catalogue entry may have (Kind values).
KINDS = tuple(k.value for k in Kind)
MAX_FILE_BYTES = 1 << 20
MAX_USER_ENTRIES = 1000  # entries of one user file
MAX_USER_PATTERNS = 64  # patterns (and context patterns) of one user entry
SHIPPED = Path(__file__).resolve().parent.parent / "catalogue"
"""The folder of the package symmtui.catalogue: the shipped files."""
# Placeholders every cause/action template may use, besides the named groups of its patterns.
TEMPLATE_FIELDS = frozenset({"summary", "port", "holder"})

_ENTRY_KEYS = frozenset({
    "id", "kind", "engine", "versions", "patterns", "context", "summary", "cause", "action", "intent",
    "source", "roles", "scope", "phase", "ends", "literals", "not_ready_on", "follow", "detail", "detail_after",
    "example",
})
_ACTION_KEYS = frozenset({"type", "text", "flag", "value", "env", "package", "version", "patch", "path"})
_ACTION_NEEDS: dict[str, tuple[str, ...]] = {
    "flag_add": ("flag",), "flag_remove": ("flag",), "env": ("env", "value"),
    "upgrade": ("package", "version"), "patch": ("patch",), "config": ("path",), "investigate": (),
}
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{1,63}")
_SOURCE = re.compile(r"[\w.-]+/[\w.-]+#\d+")
_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CatalogueError(UserError):
    """A bad catalogue entry: one line naming the file and the key."""


def _fail(where: str, key: str, problem: str) -> CatalogueError:
    text = f"catalogue {where}: {key}: {problem}"
    return CatalogueError("".join(c if c.isprintable() else repr(c)[1:-1] for c in text)[:400])


def _str(where: str, key: str, value: Any, *, required: bool = False) -> str:
    if value is None:
        if required:
            raise _fail(where, key, "is required")
        return ""
    if not isinstance(value, str):
        raise _fail(where, key, f"must be a string, not {type(value).__name__}")
    return value


def _strs(where: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(where, key, "must be a list of strings")
    return tuple(value)


def _regex(where: str, key: str, pattern: str, *, user: bool) -> Searcher:
    """A pattern compiled: a user's by RE2 (``patterns.compile_user``: time linear in the line whatever its
    shape; look-arounds and back-references refused), the shipped ones by Python's ``re``. A user's pattern
    that matches every line is refused too (``\\S``, ``\\b``: as a crash pattern every log would crash)."""
    if not pattern:
        raise _fail(where, key, "empty pattern (it would match every line)")
    rx: Searcher
    if user:
        try:
            mine = compile_user(pattern, what="pattern", limit=None)  # each is capped by _user_caps
        except PatternError as exc:
            raise _fail(where, key, str(exc)) from None
        every, rx = matches_every_line(mine), mine
    else:
        try:
            rx = re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as exc:
            raise _fail(where, key, f"bad regular expression {pattern[:80]!r}: {exc}") from None
        every = rx.search("") is not None
    if every:
        raise _fail(where, key, f"pattern {pattern[:80]!r} matches every line (even an empty or a one-letter one): "
                    "make it specific")
    return rx


def _user_caps(where: str, patterns: Sequence[str], contexts: Sequence[str]) -> None:
    """A user entry's patterns: at most MAX_USER_PATTERNS of each list, each as long as ``--ready`` may be."""
    for key, items in (("patterns", patterns), ("context", contexts)):
        if len(items) > MAX_USER_PATTERNS:
            raise _fail(where, key, f"{len(items)} patterns; at most {MAX_USER_PATTERNS} in one entry")
        for i, pat in enumerate(items):
            if len(pat) > MAX_PATTERN:
                raise _fail(where, f"{key}[{i}]", f"a pattern of {len(pat)} characters (at most {MAX_PATTERN}, as for --ready)")


_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def _combine(patterns: Sequence[str]) -> str:
    """One regex for several: each in its own group, leading global flags made local to it."""
    if len(patterns) == 1:
        return patterns[0]
    parts = []
    for p in patterns:
        m = _GLOBAL_FLAGS.match(p)
        parts.append(f"(?{m.group(1)}:{p[m.end():]})" if m else f"(?:{p})")
    return "|".join(parts)


def _template(where: str, key: str, text: str, fields: frozenset[str]) -> None:
    import string  # here: the shipped catalogue's templates are not checked at a start

    try:
        names = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        raise _fail(where, key, f"bad template ({exc}); write {{{{ and }}}} for literal braces") from None
    for name in names:
        if name not in fields:
            known = ", ".join(sorted(fields))
            raise _fail(where, key, f"unknown placeholder {{{name}}} (known: {known})")


def engines() -> tuple[str, ...]:
    """The names an entry's ``engine`` may take: "any" and every engine of the engine table (symmtui/engines/)."""
    return enginetable.names()


def parse_entry(raw: Any, where: str, *, user: bool = False, origin: str = "", check_patterns: bool = True,
                engine_file: str | None = None) -> Rule:
    """One entry table -> a Rule; a bad key raises CatalogueError naming ``where`` (file and entry) and the key.

    ``check_patterns=False`` (the shipped files only, which tests check in full) skips compiling the
    patterns and checking the templates' placeholders against their groups: the rule's regexes
    compile at their first use (``rules.LazyRegex``)."""
    if not isinstance(raw, dict):
        raise _fail(where, "entry", "must be a table ([[entry]])")
    for key in raw:
        if key not in _ENTRY_KEYS:
            raise _fail(where, str(key), f"unknown key (known: {', '.join(sorted(_ENTRY_KEYS))})")
    rid = _str(where, "id", raw.get("id"), required=True)
    if not _ID.fullmatch(rid):
        raise _fail(where, "id", f"{rid[:40]!r} must be 2-64 characters of a-z, 0-9, - and _")
    where = f"{where} (id {rid!r})"
    kind_s = _str(where, "kind", raw.get("kind"), required=True)
    if kind_s not in KINDS:
        raise _fail(where, "kind", f"{kind_s[:40]!r} is not one of {', '.join(KINDS)}")
    kind = Kind(kind_s)
    engine = _str(where, "engine", raw.get("engine")) or engine_file or "any"
    if engine_file is not None and engine != engine_file:
        raise _fail(where, "engine", f"an entry of the engine file {engine_file}.toml is that engine's (leave engine out)")
    if engine not in engines():
        raise _fail(where, "engine", f"{engine[:40]!r} is not one of {', '.join(engines())}")
    if kind is Kind.HANG:
        return _hang_entry(raw, where, rid, engine, user=user, origin=origin)
    scope = _str(where, "scope", raw.get("scope")) or "line"
    if scope not in SCOPES:
        raise _fail(where, "scope", f"{scope[:40]!r} is not one of {', '.join(SCOPES)}")
    patterns = _strs(where, "patterns", raw.get("patterns"))
    if not patterns:
        raise _fail(where, "patterns", "is required: a list of regular expressions matched on the message part of a line")
    groups: set[str] = set()
    combined = _combine(patterns)
    contexts = _strs(where, "context", raw.get("context"))
    if user:
        _user_caps(where, patterns, contexts)
    context = _combine(contexts) if contexts else None
    if check_patterns:
        for i, pat in enumerate(patterns):
            groups.update(_regex(where, f"patterns[{i}]", pat, user=user).groupindex)
        _regex(where, "patterns", combined, user=user)  # two patterns naming the same group do not combine in re
        for i, pat in enumerate(contexts):
            _regex(where, f"context[{i}]", pat, user=user)
        if context is not None:
            _regex(where, "context", context, user=user)
    roles = _strs(where, "roles", raw.get("roles"))
    for role in roles:
        if role not in ROLES:
            raise _fail(where, "roles", f"{role[:40]!r} is not one of {', '.join(ROLES)}")
    fields = TEMPLATE_FIELDS | groups if check_patterns else None
    cause = _str(where, "cause", raw.get("cause"))
    if fields is not None:
        _template(where, "cause", cause, fields)
    action = _action(where, raw.get("action"), fields)
    if (cause or action is not None) and not (cause and action is not None):
        raise _fail(where, "cause" if not cause else "action", "an entry that diagnoses needs both cause and action")
    intent = _str(where, "intent", raw.get("intent")) or None
    if intent is not None and intent not in INTENTS:
        raise _fail(where, "intent", f"{intent[:40]!r} is not one of {', '.join(INTENTS)}")
    if intent is None and action is not None:
        intent = {"patch": "patch", "investigate": None, "upgrade": None}.get(action.type, "relaunch")
    sources = _strs(where, "source", raw.get("source"))
    for i, src in enumerate(sources):
        if not _SOURCE.fullmatch(src):
            raise _fail(where, f"source[{i}]", f"{src[:60]!r} must be owner/repo#N")
    if cause and not sources and not user:
        raise _fail(where, "source", "a shipped entry with a cause needs its public source (owner/repo#N)")
    literals = _strs(where, "literals", raw.get("literals"))
    if scope == "line" and not literals:
        keys = [required_literal(p) for p in patterns]
        literals = tuple(k for k in keys if k) if all(keys) else ()
    not_ready_on = _str(where, "not_ready_on", raw.get("not_ready_on")) or None
    if not_ready_on is not None and not_ready_on not in engines()[1:]:
        raise _fail(where, "not_ready_on", f"{not_ready_on[:40]!r} is not one of {', '.join(engines()[1:])}")
    follows = _strs(where, "follow", raw.get("follow"))
    detail = _str(where, "detail", raw.get("detail")) or None
    detail_after = _str(where, "detail_after", raw.get("detail_after")) or None
    if check_patterns:
        for i, pat in enumerate(follows):
            _regex(where, f"follow[{i}]", pat, user=user)
        if detail is not None and "detail" not in _regex(where, "detail", detail, user=user).groupindex:
            raise _fail(where, "detail", "needs a group named detail: (?P<detail>...)")
        if detail_after is not None:
            _regex(where, "detail_after", detail_after, user=user)
    if (detail or detail_after) and not follows:
        raise _fail(where, "detail", "a death's detail is read from its block: give follow patterns too")
    sets_dialect = engine != "any" and (kind in (Kind.READY, Kind.PHASE, Kind.PROGRESS, Kind.INFO) or "announce" in roles)
    return Rule(
        id=rid, kind=kind, pattern=combined,
        summary=_str(where, "summary", raw.get("summary")) or rid,
        phase=_str(where, "phase", raw.get("phase")) or None,
        literals=literals,
        ends=_str(where, "ends", raw.get("ends")) or None,
        dialect=engine if sets_dialect else None,
        unless_dialect=not_ready_on,
        user=user, engine=engine, versions=_str(where, "versions", raw.get("versions")),
        cause=cause, action=action, intent=intent, source=sources, context=context,
        roles=frozenset(roles), scope=scope, origin=origin,
        follow=_combine(follows) if follows else None, detail=detail, detail_after=detail_after,
        example=_str(where, "example", raw.get("example")),
    )


# Keys that only line entries have: a hang entry is keyed by its phase.
_LINE_ONLY = ("patterns", "context", "literals", "ends", "roles", "scope", "not_ready_on", "intent", "follow", "detail",
              "detail_after", "example")


def _hang_entry(raw: dict[str, Any], where: str, rid: str, engine: str, *, user: bool, origin: str) -> Rule:
    """A ``kind = "hang"`` entry: what to try when the server hangs in ``phase`` (no patterns)."""
    for key in _LINE_ONLY:
        if key in raw:
            raise _fail(where, key, "does not apply to a hang entry (it is keyed by phase, matched on no line)")
    phase = _str(where, "phase", raw.get("phase"), required=True)
    if phase not in HANG_PHASES:
        raise _fail(where, "phase", f"{phase[:40]!r} is not one of {', '.join(HANG_PHASES)}")
    cause = _str(where, "cause", raw.get("cause"), required=True)
    _template(where, "cause", cause, frozenset())
    action = _action(where, raw.get("action"), frozenset())
    if action is None:
        raise _fail(where, "action", "is required: what to try, e.g. action = { type = \"investigate\", text = \"...\" }")
    sources = _strs(where, "source", raw.get("source"))
    for i, src in enumerate(sources):
        if not _SOURCE.fullmatch(src):
            raise _fail(where, f"source[{i}]", f"{src[:60]!r} must be owner/repo#N")
    if not sources and not user:
        raise _fail(where, "source", "a shipped hang entry needs its public source (owner/repo#N)")
    return Rule(id=rid, kind=Kind.HANG, pattern="", summary=_str(where, "summary", raw.get("summary")) or rid,
                phase=phase, user=user, engine=engine, versions=_str(where, "versions", raw.get("versions")),
                cause=cause, action=action, source=sources, origin=origin)


def hang_text(rule: Rule) -> str:
    """A hang entry as one line: what is going on, then what to try."""
    step = rule.action.text if rule.action is not None else ""
    return f"{rule.cause}: {step}" if step else rule.cause


def _action(where: str, raw: Any, fields: frozenset[str] | None) -> Action | None:
    """The ``action`` table; ``fields``: the placeholders its templates may use (None: not checked)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _fail(where, "action", "must be a table: action = { type = ..., text = ... }")
    for key in raw:
        if key not in _ACTION_KEYS:
            raise _fail(where, f"action.{key}", f"unknown key (known: {', '.join(sorted(_ACTION_KEYS))})")
    vals = {k: _str(where, f"action.{k}", raw.get(k)) for k in _ACTION_KEYS}
    atype = vals["type"]
    if atype not in ACTION_TYPES:
        raise _fail(where, "action.type", f"{atype[:40]!r} is not one of {', '.join(ACTION_TYPES)}")
    if not vals["text"]:
        raise _fail(where, "action.text", "is required: the next step in plain words")
    for need in _ACTION_NEEDS[atype]:
        if not vals[need]:
            raise _fail(where, f"action.{need}", f"is required for a {atype} action")
    if vals["flag"] and not _FLAG.fullmatch(vals["flag"]):
        raise _fail(where, "action.flag", f"{vals['flag'][:40]!r} must look like --some-flag")
    if vals["env"] and not _ENV.fullmatch(vals["env"]):
        raise _fail(where, "action.env", f"{vals['env'][:40]!r} is not an environment variable name")
    if fields is not None:
        for key in ("text", "value", "path"):
            _template(where, f"action.{key}", vals[key], fields)
    return Action(**vals)


def parse_text(text: str, where: str, *, user: bool = False, check_patterns: bool = True,
               engine_file: str | None = None) -> tuple[Rule, ...]:
    """Every ``[[entry]]`` of one catalogue file's text (``check_patterns``: see :func:`parse_entry`);
    ``engine_file``: the text is that engine's file (symmtui/engines/NAME.toml), whose entries are its engine's
    and whose other tables are the engine table's (tables.enginetable)."""
    import tomllib  # here: a start that reads the shipped catalogue from its cache parses no TOML

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(where, "toml", str(exc)) from None
    except RecursionError:
        raise _fail(where, "toml", "nested too deeply") from None
    for key in data:
        if key != "entry" and (engine_file is None or key not in ("engine", "prefix", "request")):
            raise _fail(where, str(key), "unknown table (a catalogue file holds [[entry]] tables)")
    return parse_entries(data.get("entry", []), where, user=user, check_patterns=check_patterns,
                         engine_file=engine_file)


def parse_entries(raw: Any, where: str, *, user: bool = False, key: str = "entry",
                  check_patterns: bool = True, engine_file: str | None = None) -> tuple[Rule, ...]:
    """A list of entry tables (a file's ``[[entry]]`` or a profile's ``[[rules.entry]]``)."""
    if not isinstance(raw, list):
        raise _fail(where, key, "must be an array of tables ([[entry]])")
    # One id may have several entries (a failure class with several signatures or engines).
    return tuple(parse_entry(item, f"{where}: {key}[{i}]", user=user, origin=where, check_patterns=check_patterns,
                             engine_file=engine_file)
                 for i, item in enumerate(raw))


def builtin_files() -> list[tuple[str, str]]:
    """The shipped catalogue files, (name, text), in name order: the package symmtui.catalogue's folder
    (read as a folder, not through importlib.resources, whose readers cost ~4 ms to import)."""
    files = sorted((f for f in SHIPPED.iterdir() if f.name.endswith(".toml")), key=lambda f: f.name)
    return [(f.name, f.read_text(encoding="utf-8")) for f in files]


def parse_builtin(check_patterns: bool = False) -> tuple[Rule, ...]:
    """The shipped catalogue parsed from its files: the engine files' own diagnoses (symmtui/engines/*.toml),
    symmtui/catalogue/*.toml in name order, then the engine files' markers and wrappers, the generic entries last
    (see ``ordered``). Its
    patterns are not compiled here (tests check every shipped entry in full: tests/core/test_lazy_rules.py)."""
    shipped: list[Rule] = []
    for name, text in builtin_files():
        shipped.extend(parse_text(text, f"symmtui/catalogue/{name}", check_patterns=check_patterns))
    engines: list[Rule] = []
    for name, text in engine_files():
        if name != SHARED:
            engines.extend(parse_text(text, f"symmtui/engines/{name}.toml", check_patterns=check_patterns,
                                      engine_file=name))
    # An engine's own diagnosis of its own line (SGLang's retraction is a warning, not the catalogue's CUDA OOM)
    # comes before the catalogue's shared entries; its markers and wrappers after them.
    own = [r for r in engines if r.diagnoses and not r.roles & {"wrapper", "generic"}]
    return ordered([*own, *shipped, *(r for r in engines if r not in own)])


def ordered(rules: Sequence[Rule]) -> tuple[Rule, ...]:
    """``rules`` in table order with the generic entries (role "generic": any exception of a class, any NCCL
    error) after every other: an engine's own wrapper or marker, read after the catalogue's files, still names a
    line before a generic shape does."""
    return (*(r for r in rules if "generic" not in r.roles), *(r for r in rules if "generic" in r.roles))


@lru_cache(maxsize=1)
def builtin_entries() -> tuple[Rule, ...]:
    """The shipped catalogue: symmtui/catalogue/*.toml in name order, parsed once and cached in the
    user's cache directory (tables/catcache.py)."""
    sources = [*sorted(f for f in SHIPPED.iterdir() if f.name.endswith(".toml")),
               *sorted(f for f in enginetable.FOLDER.iterdir() if f.name.endswith(".toml")),
               Path(__file__), Path(ruletypes.__file__)]
    return catcache.load(SHIPPED, sources, parse_builtin)


def user_file() -> Path:
    """Where a user's own entries live: ``$XDG_CONFIG_HOME/symmtui/catalogue.toml``."""
    return paths.config_dir() / "catalogue.toml"


def load_file(path: Path) -> tuple[Rule, ...]:
    """The entries of a user's catalogue file; a file that is not there gives none. Read through the CLI
    boundary: a FIFO or a device is refused without being opened, the size is capped (one line, exit 2)."""
    hint = "make it a TOML file of [[entry]] tables (docs/catalogue.md) or remove it"
    if not path.parent.is_dir():
        return ()  # no config folder (or a file where it should be): no user entries
    found = boundary.regular_file(path, what="the user catalogue", missing_ok=True, hint=hint)
    if found is None:
        return ()
    text = boundary.read_text(found, what="the user catalogue", max_bytes=MAX_FILE_BYTES)
    with patterns.budget(patterns.MAX_PROGRAM):  # a file of costly patterns is refused, not compiled for minutes
        rules = parse_text(text, str(path), user=True)
    if len(rules) > MAX_USER_ENTRIES:
        raise _fail(str(path), "entry", f"{len(rules)} entries; at most {MAX_USER_ENTRIES} (each is tried on every line)")
    return rules


def user_entries(profile_entries: Sequence[Rule] = ()) -> tuple[Rule, ...]:
    """The user's entries, most specific first: the profile's, then the XDG file's."""
    return (*profile_entries, *load_file(user_file()))


def as_table(rule: Rule) -> Mapping[str, Any]:
    """An entry as plain data (``--json`` output, docs)."""
    return {
        "id": rule.id, "kind": rule.kind.value, "engine": rule.engine, "versions": rule.versions,
        "pattern": rule.pattern, "cause": rule.cause, "source": list(rule.source),
        "action": rule.action.as_json() if rule.action is not None else None, "origin": rule.origin,
    }
