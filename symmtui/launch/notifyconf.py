"""The profile's ``[notify]`` table (data: which channels, which webhooks in which body format, timeouts, retries); ``symmtui.notify`` acts on it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from msgspec import Struct, field

FORMATS = ("ntfy", "slack", "json")
VERDICTS = ("ready", "crashed", "stalled", "timed_out")
"""The verdicts that notify (STOPPED does not: the user stopped it)."""
KEYS = ("webhook", "format", "timeout", "retries", "bell", "desktop", "on")
DEFAULT_TIMEOUT = 5.0
DEFAULT_RETRIES = 2
MAX_WEBHOOKS = 8
MAX_RETRIES = 5
MAX_TIMEOUT = 60.0

Fail = Callable[[str, str], Exception]
"""Makes the one-line error for ``(dotted key, message)`` (the profile's locator names file:line)."""


class Webhook(Struct, frozen=True):
    """One webhook URL and the body format it takes."""

    url: str
    format: str

    @property
    def shown(self) -> str:
        """The URL with everything that may carry a token left out: ``https://ntfy.sh/…``."""
        return redact(self.url)


class NotifyConfig(Struct, frozen=True):
    """What notifies, and how (defaults: bell and desktop on, no webhook, every verdict but STOPPED)."""

    webhooks: tuple[Webhook, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    bell: bool = True
    desktop: bool = True
    on: frozenset[str] = field(default_factory=lambda: frozenset(VERDICTS))


def redact(url: str) -> str:
    """``scheme://host[:port]/…``: the path, query and user part of a webhook URL often hold its token."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<webhook URL>"
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    where = f"{parts.scheme}://{host}{f':{port}' if port is not None else ''}"
    hidden = parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password
    return f"{where}/…" if hidden else where


def guess_format(url: str) -> str:
    """The body format a known service takes (ntfy.sh: ntfy; Slack's hooks: slack); else our JSON."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "ntfy.sh" or host.startswith("ntfy."):
        return "ntfy"
    if host == "hooks.slack.com":
        return "slack"
    return "json"


def parse_notify(table: Any, fail: Fail) -> NotifyConfig:
    """Check a ``[notify]`` table; any problem raises ``fail(key, message)`` (URLs in it redacted)."""
    if not isinstance(table, Mapping):
        raise fail("notify", "must be a table ([notify])")
    for key in table:
        if key not in KEYS:
            raise fail(f"notify.{key}", f"unknown key; known keys: {', '.join(KEYS)}")
    fmt = table.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise fail("notify.format", f"must be one of {', '.join(repr(f) for f in FORMATS)}, got {fmt!r}")
    raw = table.get("webhook", [])
    urls = [raw] if isinstance(raw, str) else raw
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise fail("notify.webhook", "must be a URL string or a list of them")
    if len(urls) > MAX_WEBHOOKS:
        raise fail("notify.webhook", f"at most {MAX_WEBHOOKS} webhooks, got {len(urls)}")
    hooks = tuple(_webhook(u, fmt, fail) for u in urls)
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        raise fail("notify.timeout", f"must be a number of seconds above 0, at most {MAX_TIMEOUT:.0f}, got {timeout!r}")
    retries = table.get("retries", DEFAULT_RETRIES)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise fail("notify.retries", f"must be a whole number from 0 to {MAX_RETRIES}, got {retries!r}")
    flags = {}
    for key in ("bell", "desktop"):
        value = table.get(key, True)
        if not isinstance(value, bool):
            raise fail(f"notify.{key}", f"must be true or false, got {value!r}")
        flags[key] = value
    on = table.get("on", list(VERDICTS))
    if not isinstance(on, list) or not all(isinstance(v, str) and v in VERDICTS for v in on):
        raise fail("notify.on", f"must be a list of verdicts from {', '.join(VERDICTS)}, got {on!r}")
    return NotifyConfig(hooks, float(timeout), retries, flags["bell"], flags["desktop"], frozenset(on))


def _webhook(url: str, fmt: str | None, fail: Fail) -> Webhook:
    shown = redact(url)
    if any(c.isspace() or not c.isprintable() for c in url):
        raise fail("notify.webhook", f"{shown}: a URL has no spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise fail("notify.webhook", f"{shown}: not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise fail("notify.webhook", f"{shown}: must be an http:// or https:// URL with a host")
    if port == 0:
        raise fail("notify.webhook", f"{shown}: port 0 is not a server's port")
    chosen = fmt or guess_format(url)
    if chosen == "ntfy" and not parts.path.strip("/"):
        raise fail("notify.webhook", f"{shown}: an ntfy webhook ends in its topic: https://ntfy.sh/TOPIC")
    return Webhook(url, chosen)
