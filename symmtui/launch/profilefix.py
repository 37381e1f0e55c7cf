"""A catalogue action as a profile change: the new TOML text, its diff, and an atomic write of it.

Also "back to what worked" (:func:`plan_restore`): the flags and variables a crash's diagnosis names, put
back as the last READY launch had them (``launch.changes.restore``): several actions in one change, and
``env_unset`` to take a variable out of ``[server.env]`` again.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from msgspec import Struct

from symmtui import boundary, fsatomic
from symmtui.errors import UserError
from symmtui.judge.rules import Action

APPLICABLE = frozenset({"flag_add", "flag_remove", "env"})
RESTORES = APPLICABLE | {"env_unset"}  # what a "back to what worked" change may do
_KEY = re.compile(r"(?m)^[ \t]*command[ \t]*=[ \t]*")
_ENV_HEADER = re.compile(r"(?m)^[ \t]*\[server\.env\][ \t]*(?:#.*)?$")
_TABLE = re.compile(r"(?m)^[ \t]*\[")


class ProfileFix(Struct, frozen=True):
    """What applying ``action`` to the profile at ``path`` changes: ``old``/``new`` text and the diff."""

    path: Path
    action: Action
    old: str
    new: str
    restores: tuple[Action, ...] = ()
    """Back to what worked: each flag and variable put back as the READY launch had it (``action`` is the first)."""
    since: str = ""
    """Which READY launch (``the last READY launch, 2026-11-30 14:02 (20 h ago)``) for back to what worked."""

    @property
    def title(self) -> str:
        """The question above the diff."""
        return "Go back to what worked?" if self.restores else "Apply the fix to the profile?"

    @property
    def note(self) -> str:
        """What back to what worked does, in lines ("" for a catalogue fix: its diagnosis says it)."""
        if not self.restores:
            return ""
        return "\n".join([f"Back to what worked: {self.since}", *(f"  {a.text}" for a in self.restores)])

    @property
    def summary(self) -> str:
        """``flag_add --x``, ``env NAME``, or ``back to what worked``: what was written, in a few words."""
        return "back to what worked" if self.restores else f"{self.action.type} {self.action.flag or self.action.env}"

    @property
    def diff(self) -> str:
        """The change as a unified diff of the TOML."""
        name = str(self.path)
        return "".join(difflib.unified_diff(self.old.splitlines(True), self.new.splitlines(True), name, name))

    @property
    def changed(self) -> bool:
        """False when the profile already says what the action asks."""
        return self.old != self.new


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _server(text: str, path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML ({exc}); fix it before applying a fix") from None
    server = data.get("server")
    if not isinstance(server, dict):
        raise UserError(f"{path}: no [server] table to change")
    return server


def _new_argv(argv: list[str], action: Action) -> list[str]:
    out: list[str] = []
    skip = False
    flag = action.flag
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word == flag or word.startswith(flag + "="):
            # drop an earlier setting of the flag (and its value when it came as the next word)
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            skip = word == flag and nxt is not None and not nxt.startswith("-")
            continue
        out.append(word)
    if action.type == "flag_add":
        out.append(flag)
        if action.value:
            out.append(action.value)
    return out


def _value_span(text: str, start: int) -> int:
    """Where the TOML value starting at ``start`` ends (it may span lines, e.g. a multi-line array)."""
    for m in re.finditer(r"\n|\Z", text[start:]):
        end = start + m.start()
        try:
            tomllib.loads("x = " + text[start:end])
        except tomllib.TOMLDecodeError:
            continue
        return end
    raise UserError("cannot find where the profile's command ends; edit it by hand")


def _with_command(text: str, path: Path, server: dict[str, Any], action: Action) -> str:
    if server.get("shell"):
        raise UserError(f"{path}: the command runs through a shell (shell = true): add {action.flag} to it by hand")
    command = server.get("command")
    if command is None:
        raise UserError(f"{path}: the profile has no command (it only attaches to a log): nothing to relaunch")
    argv = list(command) if isinstance(command, list) else shlex.split(str(command))
    new = _new_argv(argv, action)
    m = None
    for cand in _KEY.finditer(text):  # the command key of [server] (the first one outside other tables)
        m = cand
        break
    if m is None:
        raise UserError(f"{path}: cannot find the command line to change; edit it by hand")
    end = _value_span(text, m.end())
    rendered = ("[" + ", ".join(_toml_str(w) for w in new) + "]") if isinstance(command, list) else _toml_str(shlex.join(new))
    return text[: m.end()] + rendered + text[end:]


def _env_body(text: str) -> tuple[int, int] | None:
    """Where the body of ``[server.env]`` is (start, end); None without one."""
    header = _ENV_HEADER.search(text)
    if header is None:
        return None
    body_start = header.end() + 1
    nxt = _TABLE.search(text, body_start)
    return body_start, nxt.start() if nxt is not None else len(text)


def _without_env(text: str, path: Path, server: dict[str, Any], action: Action) -> str:
    env = server.get("env")
    span = _env_body(text)
    if not isinstance(env, dict) or action.env not in env or span is None:
        raise UserError(f"{action.env} is not set by {path} ([server.env]): unset it where you start symmtui")
    start, end = span
    line = re.compile(rf"(?m)^[ \t]*{re.escape(action.env)}[ \t]*=.*\n?")
    body, n = line.subn("", text[start:end], count=1)
    if not n:
        raise UserError(f"{path}: cannot find the line of {action.env} in [server.env]; edit it by hand")
    return text[:start] + body + text[end:]


def _with_env(text: str, action: Action) -> str:
    line = f"{action.env} = {_toml_str(action.value)}"
    span = _env_body(text)
    if span is None:
        return text + ("" if text.endswith("\n") or not text else "\n") + f"\n[server.env]\n{line}\n"
    body_start, body_end = span
    existing = re.compile(rf"(?m)^[ \t]*{re.escape(action.env)}[ \t]*=.*$")
    body = text[body_start:body_end]
    if existing.search(body):
        body = existing.sub(lambda _m: line, body, count=1)
    else:
        body = line + "\n" + body
    return text[:body_start] + body + text[body_end:]


def _applied(text: str, p: Path, action: Action) -> str:
    """``text`` with ``action`` made (flag_add, flag_remove, env, env_unset); checked by reading it back."""
    server = _server(text, p)
    if action.type == "env":
        new = _with_env(text, action)
    elif action.type == "env_unset":
        new = _without_env(text, p, server, action)
    else:
        new = _with_command(text, p, server, action)
    after = _server(new, p)
    if action.type in ("env", "env_unset"):
        env = after.get("env")
        ok = (isinstance(env, dict) and env.get(action.env) == action.value) if action.type == "env" else \
            not (isinstance(env, dict) and action.env in env)
    else:
        cmd = after.get("command")
        argv = list(cmd) if isinstance(cmd, list) else shlex.split(str(cmd))
        ok = argv == _new_argv(argv, action) if action.type == "flag_add" else action.flag not in argv
    if not ok:
        raise UserError(f"{p}: the change did not read back as asked; edit the profile by hand ({action.text})")
    return new


def plan(path: str | os.PathLike[str], action: Action) -> ProfileFix:
    """The profile change ``action`` asks for (flag_add, flag_remove, env); checked by reading it back."""
    p = Path(path)
    if action.type not in APPLICABLE:
        raise UserError(f"a {action.type} action is not a profile change; {action.text}")
    if action.type == "env" and ("<" in action.value or not action.value):
        raise UserError(f"{action.env} needs your value ({action.text}): set it in the profile's [server.env] by hand")
    old = boundary.read_text(p, what="the profile", max_bytes=boundary.MAX_CONFIG_BYTES)
    return ProfileFix(p, action, old, _applied(old, p, action))


def plan_restore(path: str | os.PathLike[str], actions: tuple[Action, ...], since: str) -> ProfileFix:
    """Back to what worked: every one of ``actions`` (``launch.changes.restore``) made to the profile at
    ``path``, each checked by reading it back; UserError when one cannot be (the caller offers the
    diagnosis's own fix then)."""
    p = Path(path)
    if not actions or any(a.type not in RESTORES for a in actions):
        raise UserError("nothing to put back as the READY launch had it")
    old = boundary.read_text(p, what="the profile", max_bytes=boundary.MAX_CONFIG_BYTES)
    new = old
    for action in actions:
        new = _applied(new, p, action)
    return ProfileFix(p, actions[0], old, new, actions, since)


def apply(fix: ProfileFix) -> None:
    """Write the new profile atomically, unless the file changed since ``fix`` was planned."""
    try:
        now = boundary.read_text(fix.path, what="the profile", max_bytes=boundary.MAX_CONFIG_BYTES)
        mode = fix.path.stat().st_mode & 0o777
    except OSError as exc:
        raise UserError(f"cannot read the profile {fix.path}: {exc.strerror or exc}") from None
    if now != fix.old:
        raise UserError(f"{fix.path} changed since the fix was shown; look at it again")
    try:
        fsatomic.write_atomic(fix.path, fix.new.encode("utf-8"), mode=mode)
    except OSError as exc:
        raise UserError(f"cannot write the profile {fix.path}: {exc.strerror or exc}") from None
