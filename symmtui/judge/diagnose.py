"""Event to diagnosis: the catalogue entry that names it, its cause in plain words, the typed action and intent."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Literal

from msgspec import Struct
from msgspec.structs import replace

from symmtui.judge.events import PROCESS_EXIT, Event
from symmtui.judge.rules import Action, Kind, Rule, RuleMatch, RuleSet

Intent = Literal["patch", "relaunch", "stop"]


class Diagnosis(Struct, frozen=True):
    """What went wrong, in words a tired engineer reads at 3 a.m., and the next step.

    ``id`` is the catalogue entry; ``fix`` its typed action with the values of this event filled in
    (a flag, an environment variable, an upgrade, a patch, a config file); ``source`` the public
    issues it comes from.
    """

    cause: str
    action: str
    intent: Intent | None = None
    id: str = ""
    fix: Action | None = None
    source: tuple[str, ...] = ()


PortOwner = Callable[[int], str | None]
"""port -> "pid 1234 (python -m sglang...)" or None; the launcher's ``ports.port_owner`` is one."""


# A port comes from the message: "('0.0.0.0', 30000)", "port 30000", "host:30000"; never from a source
# location such as "client_support.cc:160" or "core.py:302".
_PORTS = (
    re.compile(r"',\s*(\d{2,5})(?:,\s*\d+,\s*\d+)?\)"),
    re.compile(r"\bport\s*[=:]?\s*(\d{2,5})\b", re.IGNORECASE),
    re.compile(r"(?:\b\d{1,3}(?:\.\d{1,3}){3}|\blocalhost|\])"
               r":(\d{2,5})\b"),
    re.compile(r"(?<![\w/.-])(?![\w-]*\.(?:py|cc|cpp|cu|cuh|c|h|hpp|rs|go)\b)[A-Za-z][\w-]*(?:\.[A-Za-z][\w-]*)*:(\d{2,5})\b"),
)


def port_of(text: str) -> int | None:
    """The port a message names, or None."""
    for rx in _PORTS:
        m = rx.search(text)
        if m is not None:
            return int(m.group(1))
    return None


@lru_cache(maxsize=1)
def _default_rules() -> RuleSet:
    return RuleSet()


def _text(event: Event) -> str:
    return "\n".join((event.summary, event.text, *event.block))


def _entry(event: Event, ruleset: RuleSet | None) -> tuple[Rule, Mapping[str, str]] | None:
    if event.kind not in (Kind.CRASH, Kind.WARNING, Kind.INFO):
        return None
    rs = ruleset if ruleset is not None else _default_rules()
    if event.rule_id == PROCESS_EXIT:
        m: RuleMatch | None = rs.classify_exit(event.summary)
    elif event.entry is not None:
        return event.entry, dict(event.facts)
    else:
        m = rs.classify(event.summary, _text(event))
    if m is None:
        return None
    return m.rule, {k: v for k, v in m.match.groupdict().items() if v is not None}


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def _render(template: str, fields: _Fields) -> str:
    try:
        return template.format_map(fields)
    except (ValueError, IndexError, AttributeError):
        return template  # checked when the catalogue was read; a literal brace in a user's text stays


def diagnose(event: Event, ruleset: RuleSet | None = None, *, port_owner: PortOwner | None = None) -> Diagnosis | None:
    """A diagnosis for a crash or warning event from the catalogue, or None when no entry names it.

    ``port_owner`` names the process holding a port (for "Address already in use"); None: not asked.
    """
    found = _entry(event, ruleset)
    if found is None:
        return None
    rule, facts = found
    if not rule.cause or rule.action is None:
        return None
    fields = _Fields(facts)
    fields["summary"] = event.summary
    templates = (rule.cause, rule.action.text, rule.action.value, rule.action.path)
    if any("{port}" in t or "{holder}" in t for t in templates):
        port = port_of(event.summary) or port_of(event.text)
        owner = port_owner(port) if (port_owner is not None and port is not None) else None
        fields["port"] = f"port {port}" if port else "the server's port"
        fields["holder"] = f" by {owner}" if owner else " (probably by the server from the last run)"
    fix = replace(rule.action, text=_render(rule.action.text, fields), value=_render(rule.action.value, fields),
                  path=_render(rule.action.path, fields))
    intent = rule.intent if rule.intent in ("patch", "relaunch", "stop") else None
    return Diagnosis(
        cause=_render(rule.cause, fields),
        action=fix.text,
        intent=intent,  # type: ignore[arg-type]
        id=rule.id,
        fix=fix,
        source=rule.source,
    )


def event_json(event: Event, ruleset: RuleSet | None = None, *, time: object,
               diagnosis: Diagnosis | None | Literal["ask"] = "ask") -> dict[str, Any]:
    """An event as ``symmtui scan --json`` documents it (summary, headline, line, block, the catalogue's
    diagnosis); ``time`` is its time as the caller writes it (scan: ISO text, a bundle: the timestamp);
    ``diagnosis``: the one the Session's verdict view gave (its rules, port owner, patch state), else
    asked of ``ruleset`` here."""
    d = diagnose(event, ruleset) if diagnosis == "ask" else diagnosis
    return {
        "summary": event.summary,
        "headline": event.headline(),
        "rule": event.rule_id,
        "line": event.line_no,
        "time": time,
        "count": event.count,
        "ranks": sorted(event.ranks),
        "block": list(event.block) if event.block else [event.text],
        "diagnosis": None if d is None else {
            "id": d.id,
            "cause": d.cause,
            "action": d.action,
            "intent": d.intent,
            "fix": d.fix.as_json() if d.fix is not None else None,
            "source": list(d.source),
        },
    }
