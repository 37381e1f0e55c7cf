"""Webhook delivery: the body per format (ntfy, Slack, our JSON), one POST through httpx with a timeout
and retries; a failure is one line whose URL is redacted (webhook URLs carry their token)."""

from __future__ import annotations

import errno
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from symmtui import __version__
from symmtui.launch.notifyconf import Webhook
from symmtui.notify.message import VerdictNote
from symmtui.redact import redact

if TYPE_CHECKING:  # imported with the first POST: `wait` without a webhook never loads httpx (~0.1 s)
    import httpx

BACKOFF = 0.25
"""Seconds before the first retry; doubled for each next one (at most BACKOFF_MAX)."""
BACKOFF_MAX = 2.0
MAX_ANSWER = 64 * 1024
"""Bytes of a webhook's answer read at most (only its status matters; an endless body is not followed)."""
NTFY_PRIORITY = {"ready": 3, "stalled": 4, "crashed": 4, "timed_out": 4}
NTFY_TAGS = {"ready": "white_check_mark", "stalled": "pause_button", "crashed": "x", "timed_out": "hourglass"}


def _slack_escape(text: str) -> str:
    """Slack's three control characters in message text (``&``, ``<``, ``>``)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def request_of(hook: Webhook, note: VerdictNote) -> tuple[str, dict[str, Any]]:
    """Where to POST and the JSON body, in the hook's format; every string of the body through the one
    redactor (the note's are already; this keeps it so for any field added later)."""
    url, body = _request_of(hook, note)
    return url, _redacted(body)


def _redacted(node: Any) -> Any:
    if isinstance(node, str):
        return redact(node)
    if isinstance(node, list):
        return [_redacted(v) for v in node]
    if isinstance(node, dict):
        return {k: _redacted(v) for k, v in node.items()}
    return node


def _request_of(hook: Webhook, note: VerdictNote) -> tuple[str, dict[str, Any]]:
    if hook.format == "ntfy":
        # ntfy's JSON publishing: POST to the server's root with the topic in the body
        parts = urlsplit(hook.url)
        base, _, topic = parts.path.rstrip("/").rpartition("/")
        root = urlunsplit((parts.scheme, parts.netloc, base + "/", parts.query, ""))
        return root, {"topic": topic, "title": note.title, "message": note.text,
                      "priority": NTFY_PRIORITY[note.verdict], "tags": [NTFY_TAGS[note.verdict]]}
    if hook.format == "slack":
        return hook.url, {"text": f"*{_slack_escape(note.title)}*\n{_slack_escape(note.text)}"}
    return hook.url, {
        "source": "symmtui", "version": __version__, "state": note.state, "verdict": note.verdict,
        "title": note.title, "text": note.text, "headline": note.headline, "lines": list(note.lines),
        "elapsed": round(note.elapsed, 3), "phase": note.phase, "cause": note.cause, "next": note.next,
        "name": note.name, "host": note.host, "log": note.log_path, "launch_id": note.launch_id,
    }


def _why(exc: httpx.HTTPError, timeout: float) -> str:
    """An httpx failure in a few words, with nothing of the URL in them."""
    import httpx  # httpx (~50 ms): only a webhook that sends

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout:g} s"
    cur: BaseException | None = exc
    while cur is not None:
        if isinstance(cur, OSError) and cur.errno == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(cur, OSError) and cur.errno in (errno.ECONNRESET, errno.EPIPE):
            return "connection reset"
        cur = cur.__cause__ or cur.__context__
    if isinstance(exc, httpx.ConnectError):
        return "cannot connect (name lookup, network or TLS)"
    return type(exc).__name__


def deliver(hook: Webhook, note: VerdictNote, *, timeout: float, retries: int,
            cancel: threading.Event | None = None) -> str | None:
    """POST the note; None once a 2xx came back, else one line why not (after ``retries`` more tries on a
    connection failure, a timeout, HTTP 5xx or 429; a 4xx is final). ``cancel`` ends the waits between tries."""
    import httpx  # httpx (~50 ms): only a webhook that sends

    url, body = request_of(hook, note)
    cancel = cancel or threading.Event()
    failures: list[str] = []
    headers = {"User-Agent": f"symmtui/{__version__}"}
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False, headers=headers) as client:
        for attempt in range(retries + 1):
            try:
                status = _post(client, url, body)
            except httpx.HTTPError as exc:
                failures.append(_why(exc, timeout))
            else:
                if 200 <= status < 300:
                    return None
                failures.append(f"HTTP {status}")
                if status < 500 and status != 429:
                    break  # the request itself is wrong (or redirected): trying again changes nothing
            if attempt < retries and cancel.wait(min(BACKOFF_MAX, BACKOFF * 2 ** attempt)):
                break
    tries = f" ({len(failures)} attempts)" if len(failures) > 1 else ""
    return f"webhook {hook.shown} failed: {', then '.join(_dedupe(failures))}{tries}"


def _post(client: httpx.Client, url: str, body: dict[str, Any]) -> int:
    """POST the body; the answer's status, its body read no further than MAX_ANSWER bytes (the
    connection is closed on the rest)."""
    with client.stream("POST", url, json=body) as resp:
        read = 0
        for chunk in resp.iter_raw():
            read += len(chunk)
            if read >= MAX_ANSWER:
                break
        return resp.status_code


def _dedupe(items: list[str]) -> list[str]:
    """``HTTP 500, HTTP 500, timeout`` -> ``HTTP 500 x2, timeout``."""
    out: list[str] = []
    counts: list[int] = []
    for item in items:
        if out and out[-1] == item:
            counts[-1] += 1
        else:
            out.append(item)
            counts.append(1)
    return [f"{o} x{c}" if c > 1 else o for o, c in zip(out, counts, strict=True)]
