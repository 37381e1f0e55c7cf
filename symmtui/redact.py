"""The one redaction of secrets (tokens, keys, passwords) for everything that leaves the process: bundles, reports, notifications.

Three entry points over one set of rules, so a bundle, its report and the environment capture hide
the same things the same way:

- :func:`redact` for free text (log lines, command text, values): known token shapes (Hugging Face
  ``hf_...``, OpenAI-style ``sk-...``, GitHub ``ghp_...``/``github_pat_...``, Slack ``xox?-...``, AWS
  access key ids, JWTs), ``Authorization:``/``Bearer`` credentials, passwords in URLs
  (``https://user:PASS@host``, ``redis://:PASS@host``), and the value of any ``name=value`` /
  ``name: value`` / ``--name value`` / ``"name": "value"`` (also ``\"name\": \"value\"``) whose name ends in a
  secret word (token, key, secret, password, passwd, credential(s), auth); a quoted value to its
  closing quote, spaces and all; a ``Cookie:`` / ``Set-Cookie:`` value whole; a private key printed on
  one line between its BEGIN and END markers (the body lines of a multi-line PEM block are not
  recognised). Colour codes are taken out first where they are in the line (``password=ESC[0mX``).
  Nothing is ever masked across a line break: the line count stays.
- :func:`redact_env` for one environment variable: a secret-named variable's value is replaced whole.
- :func:`redact_argv` for a command's words: the word after a secret-named flag is replaced whole.

What is replaced becomes :data:`MASK`. Values that carry nothing (``None``, ``null``, ``false``,
``true``, empty) are left as they are so a report still says "no api key was set", and so are plain
numbers after a secret-looking name in free text (``#new-token: 7`` is a count; a flag's or a quoted
value is masked even when it is digits).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from symmtui.textsafe import strip_ansi

MASK = "[REDACTED]"

_SECRET_WORD = r"(?:token|key|secret|password|passwd|credentials?|auth)"
# A name that ends in a secret word: HF_TOKEN, api_key, --api-key, "client_secret", X-Api-Key, hf-token.
_SECRET_NAME = re.compile(rf"(?:^|[\W_]){_SECRET_WORD}$", re.IGNORECASE)
_NUMBER = re.compile(r"[0-9][0-9.,]*")
_NOTHING = frozenset({"", "none", "null", "false", "true", "''", '""', "0", "unset", "n/a"})

_SHAPES = re.compile(
    r"\bhf_[A-Za-z0-9]{16,}"  # Hugging Face
    r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"  # OpenAI / Anthropic style
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key id
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # a JWT
)
# Separators and values never cross a line ([ \t], not \s): redaction never joins two lines. A quote may
# come escaped (\" inside a JSON string that holds JSON).
# "Authorization: Bearer abc", "authorization=Basic abc", \"Authorization\": \"Bearer abc\"; and "Bearer abc".
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization\b\\?['\"]?[ \t]*[:=][ \t]*\\?['\"]?)([^\s'\",;\\]+(?:[ \t]+[^\s'\",;\\]+)?)")
_BEARER = re.compile(r"(?i)(\bbearer[ \t]+)([A-Za-z0-9._~+/=-]{8,})")
# "Cookie: sid=abc; x=y", "Set-Cookie: ...", "cookie": "..." (JSON): the whole value, to a quote or the line's end.
_COOKIE = re.compile(r"(?i)(\b(?:set-)?cookie\b\\?['\"]?[ \t]*[:=][ \t]*\\?['\"]?)([^'\"\\\r\n]+)")
# A private key printed on one line: everything between its BEGIN and END lines (or the line's end).
_PRIVATE_KEY = re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(.*?)(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)")
# scheme://user:PASS@host, also with no user (redis://:PASS@host); the password runs to the last @ of the word.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s/]+)(@)", re.IGNORECASE)
# name=value, name: value, name='value with spaces', "name": "value" (JSON), \"name\": \"value\" (JSON in
# a JSON string), --name value, --name=value: found from the secret word at the end of the name (the
# name's start is looked up backwards, see _assign). A quoted value is masked to its closing quote.
_ASSIGN = re.compile(
    r"""(?ix)
    (?P<word>token|key|secret|password|passwd|credentials?|auth)
    (?P<sep>\\?['"]?[ \t]*[=:][ \t]*|[ \t]+(?=\S))   # = or : (a JSON key's closing quote first), or a space (flags)
    (?:
        \\"(?P<escaped>(?:(?!\\")[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])*)   # \"value\" (to the next \")
      | "(?P<double>(?:[^"\\\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|\\[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])*)  # "value" (backslash escapes)
      | '(?P<single>(?:[^'\\\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|\\[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])*)  # 'value'
      | (?P<bare>[^\s'",;)}\]\\]+)
    )
    """
)
_VALUES = ("escaped", "double", "single", "bare")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_WORDS = ("token", "key", "secret", "passw", "credential", "auth")
_SHAPE_HINTS = ("hf_", "sk-", "gh", "xox", "akia", "asia", "eyj")


def _keep(value: str) -> bool:
    return value.strip().lower() in _NOTHING


def _counts(value: str) -> bool:
    """A plain number (``#new-token: 7``, ``max_tokens=512``): a count, not a secret."""
    return bool(_NUMBER.fullmatch(value))


def _assign(match: re.Match[str]) -> str:
    text = match.string
    begin = match.start("word")
    while begin > 0 and text[begin - 1] in _NAME_CHARS:
        begin -= 1
    name = text[begin: match.end("word")]
    group = next(g for g in _VALUES if match.group(g) is not None)
    sep, value = match.group("sep"), match.group(group)
    counted = group == "bare" and not name.startswith("-") and _counts(value)  # a count in prose, not a flag's value
    if not _SECRET_NAME.search(name) or _keep(value) or counted or value.startswith(MASK[:-1]):
        return match.group(0)
    if not sep.strip() and not name.startswith("-"):
        return match.group(0)  # "key value" in prose is not an assignment; "--api-key value" is
    start, end = match.span(group)
    whole = match.group(0)
    return whole[: start - match.start()] + MASK + whole[end - match.start():]


def redact(text: str) -> str:
    """``text`` with every secret it seems to hold replaced by :data:`MASK` (see the module's rules)."""
    if not text:
        return text
    return _redact(text) if len(text) > _CACHED_LEN else _redact_cached(text)


_CACHED_LEN = 2048


def _redact(text: str) -> str:
    if "\x1b" in text:  # colour codes can split a name from its value: judge the plain text
        plain = strip_ansi(text)
        masked = _redact_plain(plain)
        return text if masked == plain else masked  # a line with a secret leaves without its colours
    return _redact_plain(text)


def _redact_plain(text: str) -> str:
    # Each rule runs only where a plain substring says it could match (most log lines hold none).
    low = text.lower()
    out = text
    if any(h in low for h in _SHAPE_HINTS):
        out = _SHAPES.sub(MASK, out)
    if "authorization" in low:
        out = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, out)
    if "bearer" in low:
        out = _BEARER.sub(lambda m: m.group(0) if m.group(2) == MASK else m.group(1) + MASK, out)
    if "cookie" in low:
        out = _COOKIE.sub(lambda m: m.group(1) + MASK, out)
    if "private key-----" in low:
        out = _PRIVATE_KEY.sub(lambda m: m.group(1) + (" " + MASK + " " if m.group(2).strip() else m.group(2)) + m.group(3), out)
    if "://" in out and "@" in out:
        out = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), out)
    if any(w in low for w in _WORDS):
        out = _ASSIGN.sub(_assign, out)
    return out


_redact_cached = functools.lru_cache(maxsize=8192)(_redact)  # snapshots repeat the same event texts


def secret_name(name: str) -> bool:
    """True for a variable or flag name that says it holds a secret (HF_TOKEN, --api-key, AWS_SECRET_ACCESS_KEY)."""
    return bool(_SECRET_NAME.search(name.strip().lstrip("-")) or _SECRET_NAME.search(name))


def redact_env(name: str, value: str) -> str:
    """One environment variable's value as it may be shown: whole-masked when the name says secret."""
    if secret_name(name) and not _keep(value):
        return MASK
    return redact(value)


def redact_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """A command's words with the value of every secret-named flag (``--api-key X``, ``--hf-token=X``) masked."""
    out: list[str] = []
    mask_next = False
    for word in argv:
        if mask_next:
            mask_next = False
            if not word.startswith("-"):
                out.append(MASK)
                continue
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            if secret_name(name):
                if eq:
                    out.append(f"{name}={MASK}" if not _keep(value) else word)
                else:
                    out.append(word)
                    mask_next = True
                continue
        out.append(redact(word))
    return tuple(out)
