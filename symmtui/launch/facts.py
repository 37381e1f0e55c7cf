"""What one launch ran with, as the history keeps it: the command parsed, the variables, the model's files, GPUs, host.

:func:`of_command` reads a launch's facts from its words, environment and directory (a few ``stat`` calls:
the model folder's ``config.json`` and ``*.safetensors.index.json``; never raises). The GPUs come later,
from the launch's environment capture (``launch.versions``). :class:`LaunchFacts` is frozen, its JSON
form bounded whatever the command (at most :data:`MAX_WORDS` flags and arguments, :data:`MAX_VARS`
variables, :data:`MAX_VALUE` characters a value: longer ones keep their start and a hash, so a change
still shows), and read back strictly (a damaged object is ValueError: the history skips the line).

The command is parsed so that a reordered command is the same command: the program (with a python's
``-m MODULE`` / ``-c CODE`` / script) and the positional arguments in order, the flags as a sorted list of
(name, value): ``--flag value`` and ``--flag=value`` are one thing, a flag followed by another flag (or by
nothing) has no value, a repeated flag keeps every value. A secret (a name ``symmtui.redact`` calls secret,
or a value it would mask) is never kept: its place holds a hash keyed by this host's salt
(``<state>/launch/secret.salt``, 0600, never printed), enough to say "changed" and useless elsewhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import math
import os
import shlex
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from symmtui.errors import UserError
from symmtui.launch.envinfo import PRESENCE_PREFIXES, VALUE_PREFIXES, GpuFact
from symmtui.launch.state import launch_dir
from symmtui.redact import redact_env

MAX_WORDS = 128  # flags and positional arguments kept of one command (the rest are counted in ``more``)
MAX_VARS = 64  # variables kept
MAX_VALUE = 96  # characters of a value (a flag's, a variable's, a word's) kept as they are
MAX_NAME = 64  # characters of a flag's or a variable's name
MAX_GPUS = 64
MAX_FILES = 4  # weight index files kept (a model folder has one, rarely two)
MAX_SCAN = 10000  # entries of a model folder looked at for its index files
SECRET = "(secret"  # a kept secret: "(secret 1a2b3c4d5e6f)", or "(secret)" when no salt could be had
MODEL_FLAGS = ("--model-path", "--model", "--model-id", "--model-name-or-path")
"""The flags that name the model (SGLang, vLLM, TGI); ``vllm serve MODEL`` names it as the word after ``serve``."""
INDEX_SUFFIX = ".safetensors.index.json"
_PY_ARG_OPTS = frozenset({"-W", "-X", "--check-hash-based-pycs"})  # interpreter options that take a word

Flag = tuple[str, str | None]
FileFact = tuple[str, int, float]  # (name, size in bytes, mtime)


class LaunchFacts(Struct, frozen=True):
    """One launch's facts (see the module's docstring); ``more``: words and variables past the caps, not kept."""

    host: str = ""
    cwd: str = ""
    command: tuple[str, ...] = ()
    """The program and the positional arguments, in order."""
    flags: tuple[Flag, ...] = ()
    """(name, value or None), sorted."""
    env: tuple[tuple[str, str], ...] = ()
    """The variables that matter (``envinfo``'s prefixes), sorted; a secret's value is its keyed hash."""
    model: str | None = None
    files: tuple[FileFact, ...] = ()
    """``config.json`` and the weight index files of the model folder (when the model is a local folder)."""
    gpus: tuple[GpuFact, ...] = ()
    more: int = 0

    def values(self, flag: str) -> tuple[str | None, ...] | None:
        """The values ``flag`` was given (sorted; None: it was not given)."""
        got = tuple(v for n, v in self.flags if n == flag)
        return got or None

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host, "cwd": self.cwd, "command": list(self.command),
            "flags": [[n, v] for n, v in self.flags], "env": dict(self.env), "model": self.model,
            "files": [list(f) for f in self.files],
            "gpus": [{"index": g.index, "name": g.name, "capability": g.capability, "uuid": g.uuid}
                     for g in self.gpus],
            "more": self.more,
        }

    @classmethod
    def from_json(cls, d: Any) -> LaunchFacts:
        """Read :meth:`to_json`'s form back; ValueError (or TypeError) for anything else, within the caps."""
        if not isinstance(d, dict):
            raise TypeError("facts must be an object")
        command = _strings(d.get("command") or [], "facts.command", MAX_WORDS)
        flags_raw = d.get("flags") or []
        if not isinstance(flags_raw, list) or len(flags_raw) > MAX_WORDS:
            raise ValueError("facts.flags: not a list within the cap")
        flags: list[Flag] = []
        for f in flags_raw:
            if not (isinstance(f, list) and len(f) == 2 and isinstance(f[0], str)
                    and (f[1] is None or isinstance(f[1], str))):
                raise ValueError("facts.flags: not [name, value] pairs")
            flags.append((f[0], f[1]))
        env = d.get("env") or {}
        if not isinstance(env, dict) or len(env) > MAX_VARS or not all(isinstance(v, str) for v in env.values()):
            raise ValueError("facts.env: not an object of strings within the cap")
        files_raw = d.get("files") or []
        if not isinstance(files_raw, list) or len(files_raw) > MAX_FILES + 1:
            raise ValueError("facts.files: not a list within the cap")
        files: list[FileFact] = []
        for f in files_raw:
            if not (isinstance(f, list) and len(f) == 3 and isinstance(f[0], str) and _number(f[1])
                    and _number(f[2])):
                raise ValueError("facts.files: not [name, size, mtime] rows")
            files.append((f[0], int(f[1]), float(f[2])))
        gpus_raw = d.get("gpus") or []
        if not isinstance(gpus_raw, list) or len(gpus_raw) > MAX_GPUS:
            raise ValueError("facts.gpus: not a list within the cap")
        gpus = []
        for g in gpus_raw:
            if not isinstance(g, dict) or not isinstance(g.get("index"), int) or isinstance(g.get("index"), bool):
                raise ValueError("facts.gpus: not GPU objects")
            gpus.append(GpuFact(g["index"], _opt(g, "name"), _opt(g, "capability"), None, _opt(g, "uuid")))
        more = d.get("more", 0)
        model = d.get("model")
        if model is not None and not isinstance(model, str):
            raise ValueError("facts.model: not a string")
        if not isinstance(more, int) or isinstance(more, bool) or more < 0:
            raise ValueError("facts.more: not a count")
        return cls(host=_text(d.get("host", "")), cwd=_text(d.get("cwd", "")), command=command,
                   flags=tuple(flags), env=tuple(sorted((str(k), v) for k, v in env.items())), model=model,
                   files=tuple(files), gpus=tuple(gpus), more=more)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)  # JSON may say Infinity


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("facts: a string field is not a string")
    return v


def _opt(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) else None


def _strings(v: Any, where: str, cap: int) -> tuple[str, ...]:
    if not isinstance(v, list) or len(v) > cap or not all(isinstance(w, str) for w in v):
        raise ValueError(f"{where}: not a list of strings within the cap")
    return tuple(v)


# ---- reading a launch's facts -----------------------------------------------------------------------


_SALTS: dict[Path, bytes] = {}  # read once per state dir


def salt() -> bytes | None:
    """This host's secret salt (made once, 0600, in the launch state dir); None when it cannot be had."""
    path = launch_dir() / "secret.salt"
    if path in _SALTS:
        return _SALTS[path]
    try:
        if not path.exists():  # made aside and linked: a second symmtui never reads half a salt
            tmp = path.with_name(f".secret.salt.{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, os.urandom(32))
            finally:
                os.close(fd)
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another symmtui made it first: that one is the salt
            finally:
                os.unlink(tmp)
        data = path.read_bytes()[:64]
    except (OSError, UserError):
        return None  # a read-only state dir: secrets are kept as set / unset only
    if len(data) < 16:
        return None
    _SALTS[path] = data
    return data


def kept(name: str, value: str, key: bytes | None) -> str:
    """A value as the history keeps it: a secret as its keyed hash, a long one cut with a hash of the whole."""
    if redact_env(name, value) != value:  # a secret-named variable or flag, or a token / password in the value
        if key is None:
            return f"{SECRET})"
        mac = hmac.new(key, f"{name}\0{value}".encode("utf-8", "surrogateescape"), hashlib.sha256)
        return f"{SECRET} {mac.hexdigest()[:12]})"
    return _cut(value)


def is_secret(value: str | None) -> bool:
    """True for a kept secret's place (its value is never shown)."""
    return value is not None and value.startswith(SECRET) and value.endswith(")")


_CUT = MAX_VALUE - 16  # characters of a long value kept before its hash


def _cut(value: str, top: int = MAX_VALUE) -> str:
    if len(value) <= top:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{value[:top - 16]}…#{digest}"


def is_cut(value: str | None) -> bool:
    """True for a value kept only in part (it cannot be restored from the history)."""
    return value is not None and len(value) == _CUT + 14 and value[_CUT:_CUT + 2] == "…#"


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _program_end(argv: Sequence[str]) -> int:
    """How many words are the program: a python's own options through ``-m MODULE``, ``-c CODE`` or its script."""
    if not argv or not os.path.basename(argv[0]).startswith("python"):
        return min(1, len(argv))
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in ("-m", "-c"):
            return min(i + 2, len(argv))
        if word in _PY_ARG_OPTS:
            i += 2
            continue
        if word.startswith("-") and word != "-":
            i += 1
            continue
        return i + 1  # the script
    return i


def parse(argv: Sequence[str]) -> tuple[tuple[str, ...], list[Flag]]:
    """(program and positional arguments, flags in the order given) of a command's words."""
    words = list(argv)
    if len(words) == 3 and words[1] == "-c" and os.path.basename(words[0]) in ("sh", "bash", "dash"):
        with contextlib.suppress(ValueError):  # a shell profile: its text's words, where they split
            words = shlex.split(words[2]) or words
        if len(words) > 1 and words[0] == "exec":
            words = words[1:]
    end = _program_end(words)
    command = list(words[:end])
    flags: list[Flag] = []
    i = end
    while i < len(words):
        word = words[i]
        if word == "--":
            command += words[i + 1:]
            break
        if word.startswith("-") and len(word) > 1 and not _is_number(word):
            name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
            if eq:
                flags.append((name, value))
                i += 1
                continue
            nxt = words[i + 1] if i + 1 < len(words) else None
            if nxt is not None and (not nxt.startswith("-") or _is_number(nxt)):
                flags.append((name, nxt))
                i += 2
            else:
                flags.append((name, None))
                i += 1
            continue
        command.append(word)
        i += 1
    return tuple(command), flags


def model_of(command: Sequence[str], flags: Sequence[Flag]) -> str | None:
    """The model the command names: a model flag's value, else the word after ``serve`` (``vllm serve M``)."""
    for flag in MODEL_FLAGS:
        for name, value in flags:
            if name == flag and value:
                return value
    words = list(command)
    if "serve" in words[1:-1]:
        return words[words.index("serve", 1) + 1]
    return None


def model_files(model: str | None, cwd: str) -> tuple[FileFact, ...]:
    """(name, size, mtime) of the model folder's ``config.json`` and weight index files; () when it is no
    local folder (a hub id) or cannot be read."""
    if not model:
        return ()
    folder = Path(cwd, model).expanduser() if not os.path.isabs(model) else Path(model)
    out: list[FileFact] = []
    try:
        if not folder.is_dir():
            return ()
        names: list[str] = []
        with os.scandir(folder) as it:
            for n, entry in enumerate(it):
                if n >= MAX_SCAN:
                    break
                if entry.name.endswith(INDEX_SUFFIX):
                    names.append(entry.name)
        for name in ["config.json", *sorted(names)[:MAX_FILES]]:
            try:
                st = os.stat(folder / name)
            except FileNotFoundError:
                continue
            out.append((name, st.st_size, round(st.st_mtime, 3)))
    except OSError:
        return tuple(out)
    return tuple(out)


def of_command(argv: Sequence[str], env: Mapping[str, str], cwd: str, *, host: str | None = None) -> LaunchFacts:
    """The facts of a launch of ``argv`` in ``env`` and ``cwd`` on this host (never raises)."""
    key = salt()
    command, flags = parse(argv)
    model = model_of(command, flags)
    more = max(0, len(command) + len(flags) - MAX_WORDS)
    kept_command = tuple(kept("", w, key) for w in command[:MAX_WORDS])
    room = max(0, MAX_WORDS - len(kept_command))
    kept_flags = sorted(((_cut(n, MAX_NAME), None if v is None else kept(n, v, key)) for n, v in flags[:room]),
                        key=lambda f: (f[0], f[1] or ""))
    names = sorted(n for n in env if n.startswith(VALUE_PREFIXES + PRESENCE_PREFIXES))
    more += max(0, len(names) - MAX_VARS)
    kept_env = tuple((_cut(n, MAX_NAME), kept(n, env[n], key)) for n in names[:MAX_VARS])
    return LaunchFacts(
        host=_cut(host if host is not None else socket.gethostname()),
        cwd=_cut(cwd), command=kept_command, flags=tuple(kept_flags), env=kept_env,
        model=kept("--model", model, key) if model is not None else None,
        files=model_files(model, cwd), more=more,
    )
