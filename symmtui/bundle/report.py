"""A bundle as a Markdown report to paste into a GitHub issue: verdict, root cause with its log excerpt,
diagnosis and fix, what changed since it last worked, phase timings, environment, and the log's tail in a
collapsed block.

Everything comes from the bundle (already redacted when written) and the whole text passes
``symmtui.redact.redact`` once more: a bundle written by hand or by an older symmtui prints no secret.
Text from the log, the server or the bundle is always quoted as code (an inline span with a fence
longer than any backtick run inside it, or a fenced block likewise): no HTML, link or ``</details>`` in a
log line is live in the rendered issue. Prose from the catalogue has HTML and link brackets escaped. A
bundle whose fields have the wrong types (a hand edit) is one BundleError line.
"""

from __future__ import annotations

import re
import time
from typing import Any

from symmtui.bundle.format import Bundle, BundleError
from symmtui.clitext import headless
from symmtui.redact import redact

EXCERPT_BEFORE = 8
EXCERPT_AFTER = 4
DEFAULT_TAIL = 100
MAX_BLOCK_LINES = 60  # a traceback block in the report past this keeps its head and tail
_STATES = {"ready": "READY", "crashed": "CRASHED", "stalled": "STALLED", "timed_out": "TIMED OUT",
           "stopped": "STOPPED", "waiting": "WAITING", "starting": "STARTING"}


def _state(value: Any) -> str:
    return _STATES.get(str(value), str(value).upper())


def _no(value: Any) -> str:
    """A kept line's number, right-aligned; a line without one (check lets absent fields through) "–"."""
    return f"{value:>6}" if isinstance(value, int) else f"{'–':>6}"


def _seconds(value: Any) -> str:
    if not isinstance(value, int | float):
        return "–"
    if value < 60:
        return f"{value:.1f} s"
    return f"{int(value // 60)} min {value % 60:04.1f} s"


def _cell(text: Any) -> str:
    """Text safe in a Markdown table cell: one line, pipes escaped."""
    return str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def _code(text: Any) -> str:
    """Inline code that holds any backticks of ``text`` (a longer backtick run around it); one line."""
    s = _cell(text) or "–"
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")) else ""
    return f"{tick}{pad}{s}{pad}{tick}"


def _prose(text: Any) -> str:
    """Catalogue prose (its own `code` spans kept): no live HTML (``<``, ``>``, ``&`` as entities) and no
    link or image syntax (brackets escaped); one line."""
    s = _cell(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return s.replace("[", "\\[").replace("]", "\\]")


_AUTOLINK = re.compile(r"://|\bwww\.|@|\b[\w.+-]+\.[a-z]{2,}/", re.IGNORECASE)


def _said(text: Any) -> str:
    """A diagnosis line: catalogue prose (:func:`_prose`), or code where it holds what a renderer would turn into
    a link or a mention by itself (GitHub autolinks ``http://``, ``www.`` and ``@name`` in text, escaped or not;
    the cause quotes the log)."""
    return _code(text) if _AUTOLINK.search(str(text)) else _prose(text)


def _fence(lines: list[str], lang: str = "text") -> list[str]:
    """A fenced block longer than any backtick run inside it, so a log line cannot close it."""
    longest = max((len(m) for line in lines for m in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, *lines, fence]


def _wall(ts: Any) -> str:
    if not isinstance(ts, int | float) or ts <= 0:
        return "unknown"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _excerpt(bundle: Bundle, generation: int, line_no: int) -> tuple[list[str], bool]:
    """The recorded lines around ``line_no`` of one launch (``>>`` marks it); False when it was not kept."""
    rows = [r for r in bundle.lines if len(r) >= 5 and r[1] == generation]
    idx = next((i for i, r in enumerate(rows) if r[2] == line_no), None)
    if idx is None:
        return [], False
    out = []
    for r in rows[max(0, idx - EXCERPT_BEFORE): idx + EXCERPT_AFTER + 1]:
        mark = ">>" if r[2] == line_no else "  "
        out.append(f"{mark} {_no(r[2])}  {r[4]}")
    return out, True


def _cut_block(block: list[str]) -> list[str]:
    if len(block) <= MAX_BLOCK_LINES:
        return block
    half = MAX_BLOCK_LINES // 2
    return [*block[:half], f"… {len(block) - 2 * half} lines …", *block[-half:]]


def _verdict_line(v: dict[str, Any]) -> str:
    head = f"**{_prose(_state(v.get('state')))}** after {_seconds(v.get('elapsed'))}"
    cause = v.get("cause") or {}
    if cause.get("headline") and v.get("state") != "ready":
        head += f": {_code(cause['headline'])}"
    elif v.get("detail") and v.get("state") != "ready":
        head += f": {_code(v['detail'])}"
    return head


def _cause_section(bundle: Bundle, v: dict[str, Any], earlier: bool) -> list[str]:
    cause = v.get("cause")
    if not cause:
        return []
    out = ["", "### Root cause" + (" (an earlier launch)" if earlier else ""), ""]
    ranks = cause.get("ranks") or []
    where = f"line {cause.get('line')}" if cause.get("line") else "no log line"
    spread = f", {len(ranks)} ranks" if len(ranks) > 1 else ""
    out.append(f"{_code(cause.get('headline') or cause.get('summary'))} ({where}{spread}, launch "
               f"{int(v.get('generation') or 0) + 1})")
    excerpt, found = _excerpt(bundle, int(v.get("generation") or 0), int(cause.get("line") or 0))
    if found:
        out += ["", "The log around it:", "", *_fence(excerpt)]
    block = [str(b) for b in cause.get("block") or []]
    if block and (len(block) > 1 or not found):
        out += ["", "The error as the engine grouped it:", "", *_fence(_cut_block(block))]
    diag = cause.get("diagnosis")
    out += ["", "### Diagnosis and fix", ""]
    if not diag:
        out.append("No catalogue entry names this error (symmtui's catalogue: docs/catalogue.md).")
        return out
    out.append(f"- **Cause:** {_said(diag.get('cause'))}")
    action = diag.get("action")
    out.append(f"- **Fix:** {_said(headless(action) if isinstance(action, str) else action)}")
    fix = diag.get("fix") or {}
    typed = [f"{k} {_code(fix[k])}" for k in ("flag", "env", "value", "package", "version", "path") if fix.get(k)]
    if fix.get("type"):
        out.append(f"- **Fix type:** {_code(fix['type'])}" + (f" ({', '.join(typed)})" if typed else ""))
    if diag.get("id"):
        out.append(f"- **Catalogue entry:** {_code(diag['id'])}")
    if diag.get("source"):
        out.append("- **Known from:** " + ", ".join(_code(s) for s in diag["source"]))
    return out


def _changed(bundle: Bundle) -> list[str]:
    """What changed since the last READY launch, as the verdict said it (the last verdict that said it)."""
    said = [v for v in bundle.verdicts if v.get("changes")]
    if not said:
        return []
    v = said[-1]
    changes = v["changes"]
    which = f"launch {int(v.get('generation') or 0) + 1}, {_prose(_state(v.get('state')))}"
    since = str(changes.get("since") or "")
    out = ["", "### Changed since it last worked", "", f"{_prose(since[:1].upper() + since[1:])} ({which}):"]
    lines = [str(t) for t in changes.get("lines") or []]
    return [*out, "", *(f"- {_code(t)}" for t in lines)] if lines else out


def _timings(bundle: Bundle) -> list[str]:
    out = ["", "### Timings", ""]
    verdicts = bundle.verdicts
    if not verdicts:
        return [*out, "No verdict was reached while symmtui watched; no phase finished."]
    out += ["| launch | phase | starts at | took |", "|---|---|---|---|"]
    for v in verdicts:
        label = f"{int(v.get('generation') or 0) + 1} ({_prose(_state(v.get('state')))})"
        phases = v.get("phases") or []
        if not phases:
            out.append(f"| {label} | (no phase seen) | – | – |")
        for p in phases:
            out.append(f"| {label} | {_code(p.get('name'))} | {_seconds(p.get('start'))} | "
                       f"{_seconds(p.get('duration')) if p.get('duration') is not None else 'open'} |")
    return out


def _environment(bundle: Bundle) -> list[str]:
    env = bundle.environment
    out = ["", "### Environment", ""]
    if env is None:
        return [*out, "Not captured (the run ended before the capture finished)."]
    out += ["| | |", "|---|---|"]
    out += [f"| {_prose(k)} | {_code(v)} |" for k, v in env.rows()]
    if env.notes:
        out += ["", *[f"- {_prose(n)}" for n in env.notes]]
    return out


def check(bundle: Bundle) -> None:
    """Every field the report reads has its type (absent is fine); else one BundleError line naming it."""
    where = str(bundle.path)

    def need(value: Any, kinds: tuple[type, ...], name: str) -> None:
        if value is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            wanted = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
            raise BundleError(f"{where}: damaged bundle ({name} is {_KIND_NAMES.get(type(value), type(value).__name__)}, "
                              f"not {wanted}); give a bundle as symmtui wrote it")

    data = bundle.data
    text: tuple[type, ...] = (str,)
    number: tuple[type, ...] = (int, float)
    obj: tuple[type, ...] = (dict,)
    seq: tuple[type, ...] = (list,)
    for key, kinds in (("name", text), ("host", text), ("started_at", number), ("log", obj)):
        need(data.get(key), kinds, key)
    log = data.get("log") or {}
    for key in ("lines_seen", "omitted_lines"):
        need(log.get(key), (int,), f"log.{key}")
    def item(value: Any, kinds: tuple[type, ...], name: str) -> None:
        """An element of a list: never absent, so null is damage too."""
        need(value if value is not None else _NULL, kinds, name)

    for i, row in enumerate(bundle.lines):
        item(row, seq, f"log line {i + 1}")
        for j, kinds in ((1, (int,)), (2, (int,)), (4, text)):
            need(row[j] if len(row) > j else None, kinds, f"log line {i + 1}[{j}]")
    for i, v in enumerate(bundle.verdicts):
        at = f"verdicts[{i}]"
        item(v, obj, at)
        for key, kinds in (("state", text), ("generation", (int,)), ("elapsed", number), ("detail", text),
                           ("cause", obj), ("phases", seq), ("changes", obj)):
            need(v.get(key), kinds, f"{at}.{key}")
        changes = v.get("changes") or {}
        need(changes.get("since"), text, f"{at}.changes.since")
        need(changes.get("lines"), seq, f"{at}.changes.lines")
        for j, line in enumerate(changes.get("lines") or []):
            item(line, text, f"{at}.changes.lines[{j}]")
        for j, phase in enumerate(v.get("phases") or []):
            item(phase, obj, f"{at}.phases[{j}]")
            for key, kinds in (("name", text), ("start", number), ("duration", number)):
                need(phase.get(key), kinds, f"{at}.phases[{j}].{key}")
        cause = v.get("cause") or {}
        for key, kinds in (("headline", text), ("summary", text), ("line", (int,)), ("ranks", seq),
                           ("block", seq), ("diagnosis", obj)):
            need(cause.get(key), kinds, f"{at}.cause.{key}")
        diag = cause.get("diagnosis") or {}
        for key, kinds in (("cause", text), ("action", text), ("fix", obj), ("id", text), ("source", seq)):
            need(diag.get(key), kinds, f"{at}.cause.diagnosis.{key}")


class _Null:
    """null where a list holds an element (check names it "null")."""


_NULL = _Null()
_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", dict: "an object", list: "a list",
               bool: "a boolean", _Null: "null"}


def _tail(bundle: Bundle, count: int) -> list[str]:
    lines = bundle.lines
    log = bundle.data.get("log") or {}
    seen = int(log.get("lines_seen") or len(lines))
    shown = lines[-count:] if count > 0 else []
    omitted = int(log.get("omitted_lines") or 0)
    note = f" ({omitted} lines in the middle not kept in the bundle)" if omitted else ""
    out = ["", f"<details><summary>Log tail: the last {len(shown)} of {seen} lines{note}</summary>", ""]
    out += _fence([f"{_no(r[2])}  {r[4]}" for r in shown if len(r) >= 5])
    return [*out, "", "</details>"]


def markdown(bundle: Bundle, *, tail: int = DEFAULT_TAIL) -> str:
    """The report, one string (ends with a newline), secrets redacted."""
    data = bundle.data
    final = bundle.final
    check(bundle)
    title = _prose(_state(final.get("state"))) if final else "NO VERDICT"
    out = [f"## symmtui report: {title}"]
    if final and final.get("state") != "ready" and (final.get("cause") or {}).get("headline"):
        out[0] += f": {_code(final['cause']['headline'])}"
    out += ["", f"- **Server:** {_code(data.get('name') or 'unknown')} on {_code(data.get('host') or 'unknown')}",
            f"- **Recorded:** {_wall(data.get('started_at'))} by symmtui "
            f"{_code(bundle.environment.symmtui) if bundle.environment else 'unknown'} "
            f"({'complete' if data.get('final') else 'written at a verdict; the run went on'})"]
    verdicts = bundle.verdicts
    if not verdicts:
        out.append("- **Verdict:** none: the run ended before READY, CRASHED, STALLED or TIMED OUT")
    for v in verdicts:
        out.append(f"- **Launch {int(v.get('generation') or 0) + 1}:** {_verdict_line(v)}")
    with_cause = [v for v in verdicts if v.get("cause")]
    if final is not None and final.get("cause"):
        out += _cause_section(bundle, final, earlier=False)
    elif with_cause:
        out += _cause_section(bundle, with_cause[-1], earlier=True)
    out += _changed(bundle)
    out += _timings(bundle)
    out += _environment(bundle)
    out += _tail(bundle, tail)
    out += ["", f"<sub>symmtui report from {_code(bundle.path.name)}</sub>"]
    return redact("\n".join(out)) + "\n"
