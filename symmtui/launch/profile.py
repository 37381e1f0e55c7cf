"""Launch profiles: read and check ``symmtui.toml`` (command, cwd, env, logs, url, timeouts, rules)."""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from msgspec import Struct, field

from symmtui import boundary, paths, patterns
from symmtui.errors import UserError
from symmtui.judge.timeouts import DEFAULT_STALL, DEFAULT_TIMEOUT

if TYPE_CHECKING:  # imported where used: a verb that fails on its profile imports neither the engine nor these
    from symmtui.judge.rules import Rule
    from symmtui.launch.notifyconf import NotifyConfig
    from symmtui.logs.logcmd import LogCommand

PROFILE_NAME = "symmtui.toml"
DEFAULT_GRACE = 30.0

_SERVER_KEYS = ("command", "cwd", "log_dir", "log", "log_cmd", "log_cmd_shell", "url", "timeout", "stall", "shell",
                "env", "grace", "gpus")
_RULES_KEYS = ("ready", "crash", "entry")
_TOP_KEYS = ("server", "rules", "nodes", "notify")
_NODE_KEYS = ("name", "log", "log_cmd", "gpus", "launch", "stop")
NODE_RANK = "{node_rank}"
"""Filled in with the node's rank (its place in the [[nodes]] list, from 0) in launch and stop."""


class ProfileError(UserError):
    """A profile that cannot be used: names the file, the line and the key (always one line)."""

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        one_line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        super().__init__(one_line, exit_code=exit_code)


class NodeSpec(Struct, frozen=True):
    """One node of a multi-node server (``[[nodes]]``): where its log comes from, its GPUs, its launch/stop.

    ``rank`` is its place in the list (0: the head, which serves ``server.url``). ``launch`` and ``stop``
    are argv with ``{node_rank}`` filled in (``/bin/sh -c`` when ``server.shell``). Without ``log`` or
    ``log_cmd`` the node's log is its launch command's own output (ssh forwards the remote server's).
    """

    name: str
    rank: int
    log: Path | None = None
    log_cmd: tuple[str, ...] | None = None
    log_cmd_text: str = ""
    gpus: str = "nvml"
    launch: tuple[str, ...] | None = None
    launch_text: str = ""
    stop: tuple[str, ...] | None = None
    stop_text: str = ""


class Profile(Struct, frozen=True):
    """One server to bring up (or, without a command, one log to watch).

    ``argv`` is exactly what is executed: the user's argv list, a shlex-split string, or
    ``("/bin/sh", "-c", text)`` when ``shell = true``. ``None`` means attach only.
    """

    path: Path | None
    argv: tuple[str, ...] | None = None
    command_text: str = ""
    shell: bool = False
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    log: Path | None = None
    log_cmd: LogCommand | None = None
    """A command whose output is the log (``log_cmd``, ``log_cmd_shell``): followed instead of a file."""
    url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    stall: float = DEFAULT_STALL
    grace: float = DEFAULT_GRACE
    ready: tuple[str, ...] = ()
    crash: tuple[str, ...] = ()
    entries: tuple[Rule, ...] = ()  # the profile's own catalogue entries ([[rules.entry]])
    nodes: tuple[NodeSpec, ...] = ()  # a multi-node server ([[nodes]]); empty: one local server
    notify: NotifyConfig | None = None  # the [notify] table (None: none; symmtui.launch.notifyconf)
    gpus: tuple[str, ...] = ("nvml",)
    """Where the dashboard reads the server's GPUs (``server.gpus``): ``nvml`` and/or exporters' URLs."""

    @property
    def attach_only(self) -> bool:
        """True when the profile has no command: symmtui only watches ``log``."""
        return self.argv is None

    @property
    def key(self) -> str:
        """Stable id of this profile (a hash of its resolved path) used to name state files."""
        import hashlib  # here: hashlib (~3 ms): the stop verb's error path loads this module

        where = str(self.path.resolve()) if self.path is not None else "<no file>"
        return hashlib.sha256(where.encode()).hexdigest()[:16]

    @property
    def command_hash(self) -> str:
        """Hash of what runs (argv, cwd, env): launches with the same hash share an ETA."""
        return command_hash(self.argv or (), self.cwd, self.env)

    @property
    def log_path(self) -> Path | None:
        """The log to watch: ``log`` when attaching, else ``<log_dir>/latest.log``."""
        if self.log is not None:
            return self.log
        if self.log_dir is not None:
            return self.log_dir / "latest.log"
        return None

    @property
    def attach_reason(self) -> str:
        """Why relaunch is unavailable for an attach-only profile (one line)."""
        where = self.path if self.path is not None else "the profile"
        watching = f"`{self.log_cmd.text}`" if self.log_cmd is not None else self.log
        return (
            f"{where} has no server.command (attach only: watching {watching}); "
            "add server.command and server.log_dir to let symmtui launch and relaunch the server"
        )


def command_hash(argv: tuple[str, ...] | list[str], cwd: Path | None, env: Mapping[str, str]) -> str:
    """sha256 over argv, cwd and the extra environment (sorted), shortened to 16 hex digits."""
    import hashlib  # here: hashlib (~3 ms): the stop verb's error path loads this module

    h = hashlib.sha256()
    for part in argv:
        h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    h.update(b"\1" + str(cwd or "").encode("utf-8", "surrogateescape") + b"\1")
    for k in sorted(env):
        h.update(f"{k}={env[k]}".encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()[:16]


def find_profile(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The profile to use: ``explicit``, else ./symmtui.toml, else $XDG_CONFIG_HOME/symmtui/symmtui.toml."""
    if explicit is not None:
        try:
            p = Path(explicit).expanduser()
        except RuntimeError as exc:  # "~user/..." with no such user
            raise ProfileError(f"{explicit}: no such user's home directory (check --config)") from exc
        try:  # stat, never open: a FIFO, a device, a name too long or a loop is one line
            boundary.regular_file(p, what="profile", hint="check --config")
        except boundary.InputError as exc:
            raise ProfileError(str(exc)) from None
        return p
    try:
        here: Path | None = Path.cwd() / PROFILE_NAME
    except OSError:  # the working directory was deleted: there is no ./symmtui.toml
        here = None
    for candidate, env in ((here, None), (paths.config_dir() / PROFILE_NAME, "XDG_CONFIG_HOME")):
        if candidate is not None and _is_profile_file(candidate, env):
            return candidate
    return None


def _is_profile_file(p: Path, env: str | None) -> bool:
    """A searched-for profile exists (regular file); an unreadable folder on the way is an error, not 'none'."""
    try:
        st = os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        fix = f"fix its permissions or set {env} elsewhere" if env else "fix its permissions"
        raise ProfileError(f"{p}: cannot look for a profile there ({exc.strerror}); {fix}, "
                           "or pass --config FILE") from None
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):  # a FIFO, a device: there, but never read
        raise ProfileError(f"{p} is not a regular file (a FIFO or a device is never read as a profile); "
                           "replace it with the profile's TOML, or pass --config FILE")
    return stat.S_ISREG(st.st_mode)


def load_profile(path: str | os.PathLike[str] | None = None) -> Profile:
    """Find (see :func:`find_profile`) and parse a profile; any problem is a ProfileError naming file:line:key."""
    found = find_profile(path)
    if found is None:
        raise ProfileError(
            f"no launch profile: create ./{PROFILE_NAME} (or {paths.config_dir() / PROFILE_NAME}) "
            "with a [server] table, or pass --config FILE"
        )
    try:
        raw = boundary.read_bytes(found, what="profile", max_bytes=boundary.MAX_CONFIG_BYTES)
    except boundary.InputError as exc:
        raise ProfileError(f"{found}: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{found}: profile is not UTF-8 (byte {exc.start}); save it as UTF-8") from exc
    return parse_profile(text, found)


_AT_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")


def parse_profile(text: str, path: Path) -> Profile:
    """Parse profile text; ``path`` names it in errors and anchors relative paths."""
    import tomllib  # here: tomllib (~5 ms): only a profile read from a file

    try:
        data = boundary.parse_toml(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _AT_LINE.search(msg)
        if m:
            line = int(m.group(1))
            reason = _AT_LINE.sub("", msg).strip()
            key = _key_on_line(text, line)
            where = f"{path}:{line}:{m.group(2)}"
            what = f" (key {key})" if key else ""
            raise ProfileError(f"{where}: malformed TOML{what}: {reason}; fix the file") from exc
        raise ProfileError(f"{path}: malformed TOML: {msg}; fix the file") from exc
    return _build(data, text, path)


def _key_on_line(text: str, lineno: int) -> str | None:
    lines = text.splitlines()
    if not 1 <= lineno <= len(lines):
        return None
    table = ""
    for line in lines[:lineno]:
        hm = re.match(r"\s*\[([^\[\]]+)\]", line)
        if hm:
            table = hm.group(1).strip()
    km = re.match(r"\s*([A-Za-z0-9_\-\"']+)\s*=", lines[lineno - 1])
    if not km:
        return None
    key = km.group(1).strip("\"'")
    return f"{table}.{key}" if table else key


class _Locator:
    """Finds the line of ``table.key`` in the source text (tomllib gives values, not positions)."""

    def __init__(self, text: str, path: Path) -> None:
        self.path = path
        self._lines: dict[str, int] = {}
        table = ""
        arrays: dict[str, int] = {}  # [[name]] tables seen so far: name -> count
        for no, line in enumerate(text.splitlines(), start=1):
            am = re.match(r"\s*\[\[\s*([^\[\]]+?)\s*\]\]", line)
            if am:
                name = am.group(1).replace('"', "").replace("'", "")
                index = arrays.get(name, 0)
                arrays[name] = index + 1
                table = f"{name}[{index}]"
                self._lines.setdefault(table, no)
                continue
            hm = re.match(r"\s*\[\s*([^\[\]]+?)\s*\]", line)
            if hm:
                table = hm.group(1).replace('"', "").replace("'", "")
                self._lines.setdefault(table, no)
                continue
            km = re.match(r"""\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-.]+)\s*=""", line)
            if km:
                key = km.group(1).strip("\"'")
                full = f"{table}.{key}" if table else key
                self._lines.setdefault(full, no)

    def where(self, dotted: str) -> str:
        no = self._lines.get(dotted)
        if no is None and "." in dotted:
            no = self._lines.get(dotted.rsplit(".", 1)[0])
        return f"{self.path}:{no}" if no is not None else str(self.path)

    def fail(self, dotted: str, message: str) -> ProfileError:
        return ProfileError(f"{self.where(dotted)}: {dotted}: {message}")


def _unknown(loc: _Locator, table: str, keys: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in keys:
        if key not in allowed:
            dotted = f"{table}.{key}" if table else key
            import difflib  # here: difflib: only a near miss's message

            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(allowed)}"
            raise loc.fail(dotted, f"unknown key; {hint}")


def _number(loc: _Locator, dotted: str, value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise loc.fail(dotted, f"must be a number of seconds, got {type(value).__name__} {value!r}")
    if not 0 <= value <= boundary.MAX_SECONDS:  # NaN fails too
        raise loc.fail(dotted, f"must be a number of seconds from 0 to {boundary.MAX_SECONDS:.0f}, got {value!r}")
    return float(value)


def _string(loc: _Locator, dotted: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise loc.fail(dotted, f"must be a string, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise loc.fail(dotted, "must not be empty")
    if "\0" in value:
        raise loc.fail(dotted, "must not contain NUL characters")
    return value


def _path(loc: _Locator, dotted: str, value: Any, base: Path) -> Path | None:
    s = _string(loc, dotted, value)
    if s is None:
        return None
    try:
        p = Path(s).expanduser()
    except RuntimeError as exc:  # "~user" with no such user
        raise loc.fail(dotted, f"cannot expand {s.split('/', 1)[0]!r}: no such user's home directory") from exc
    return p if p.is_absolute() else (base / p)


def _patterns(loc: _Locator, dotted: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise loc.fail(dotted, "must be a list of regular-expression strings")
    for pattern in value:
        if not pattern:
            raise loc.fail(dotted, "empty pattern (it would match every line)")
        problem = boundary.regex_problem(pattern)  # RE2's: runs in linear time, or one line why not
        if problem is not None:
            raise loc.fail(dotted, problem)
    return tuple(value)


def _build(data: Mapping[str, Any], text: str, path: Path) -> Profile:
    import hashlib  # here: hashlib (~3 ms): the stop verb's error path loads this module

    loc = _Locator(text, path)
    base = path.parent.resolve()
    _unknown(loc, "", data, _TOP_KEYS)
    server = data.get("server")
    if server is None:
        raise ProfileError(f"{path}: no [server] table; add one with command + log_dir (or log to attach)")
    if not isinstance(server, dict):
        raise loc.fail("server", "must be a table ([server])")
    _unknown(loc, "server", server, _SERVER_KEYS)
    rules = data.get("rules", {})
    if not isinstance(rules, dict):
        raise loc.fail("rules", "must be a table ([rules])")
    _unknown(loc, "rules", rules, _RULES_KEYS)

    shell = server.get("shell", False)
    if not isinstance(shell, bool):
        raise loc.fail("server.shell", f"must be true or false, got {shell!r}")

    env_raw = server.get("env", {})
    if not isinstance(env_raw, dict):
        raise loc.fail("server.env", "must be a table ([server.env]) of NAME = \"value\"")
    env: dict[str, str] = {}
    for k, v in env_raw.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise loc.fail(f"server.env.{k}", "is not a valid environment variable name")
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise loc.fail(f"server.env.{k}", f"must be a string, got {type(v).__name__}")
        sv = str(v)
        if "\0" in sv:
            raise loc.fail(f"server.env.{k}", "must not contain NUL characters")
        env[k] = sv

    argv, command_text = _command(loc, server.get("command"), shell)
    log_cmd_shell = server.get("log_cmd_shell", False)
    if not isinstance(log_cmd_shell, bool):
        raise loc.fail("server.log_cmd_shell", f"must be true or false, got {log_cmd_shell!r}")
    log_cmd = _log_command(loc, server.get("log_cmd"), log_cmd_shell)
    if log_cmd is None and "log_cmd_shell" in server:
        raise loc.fail("server.log_cmd_shell", "goes with server.log_cmd (the command whose output is the log)")
    cwd = _path(loc, "server.cwd", server.get("cwd"), base)
    log_dir = _path(loc, "server.log_dir", server.get("log_dir"), base)
    log = _path(loc, "server.log", server.get("log"), base)
    url = _string(loc, "server.url", server.get("url"))
    if url is not None:
        try:
            parts = urlsplit(url)
        except ValueError as exc:  # e.g. an unclosed "[" of an IPv6 address
            raise loc.fail("server.url", f"is not a valid URL ({exc}): {url!r}") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise loc.fail("server.url", f"must be an http:// or https:// URL with a host, got {url!r}")
        try:
            port = parts.port
        except ValueError as exc:
            raise loc.fail("server.url", f"bad port in {url!r} ({exc})") from exc
        if port == 0:
            raise loc.fail("server.url", f"bad port in {url!r} (port 0 is not a server's port)")

    if log is not None and log_cmd is not None:
        raise loc.fail("server.log_cmd", "give server.log (a file) or server.log_cmd (a command), not both")
    gpus = _gpu_specs(loc, server.get("gpus"))
    nodes = _nodes(loc, data.get("nodes"), shell, base)
    if nodes:
        if "gpus" in server:
            raise loc.fail("server.gpus", "with [[nodes]], each node names its own gpus; move it into the "
                           "[[nodes]] tables")
        for key in ("command", "log", "log_cmd"):
            if key in server:
                raise loc.fail(f"server.{key}", "with [[nodes]], each node has its own launch and log; "
                               f"remove server.{key} (server.url is the head node's /health)")
        if log_dir is None:
            log_dir = paths.state_dir("logs") / hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    elif argv is None:
        if log is None and log_cmd is None:
            raise loc.fail("server", "needs either command (to launch) or log / log_cmd (to attach to a running "
                           "server)")
        if log_dir is not None:
            raise loc.fail("server.log_dir", "is only used with server.command; to attach, set server.log")
    elif log is not None:
        raise loc.fail(
            "server.log",
            "with server.command use server.log_dir (each launch gets its own log); "
            "server.log is for attach-only profiles",
        )
    elif log_dir is None:
        log_dir = paths.state_dir("logs") / hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]

    return Profile(
        path=path,
        argv=argv,
        command_text=command_text,
        shell=shell,
        cwd=cwd,
        env=env,
        log_dir=log_dir,
        log=log,
        log_cmd=log_cmd,
        url=url,
        timeout=_number(loc, "server.timeout", server.get("timeout"), DEFAULT_TIMEOUT),
        stall=_number(loc, "server.stall", server.get("stall"), DEFAULT_STALL),
        grace=_number(loc, "server.grace", server.get("grace"), DEFAULT_GRACE),
        ready=_patterns(loc, "rules.ready", rules.get("ready")),
        crash=_patterns(loc, "rules.crash", rules.get("crash")),
        entries=_entries(path, rules.get("entry")),
        nodes=nodes,
        notify=_notify(data["notify"], loc) if "notify" in data else None,
        gpus=gpus,
    )


def _gpu_specs(loc: _Locator, value: Any) -> tuple[str, ...]:
    """``server.gpus``: "nvml", an exporter's URL, or a list of them (default: "nvml")."""
    # the GPU specs (exporter, NVML): only a profile with [gpus]
    from symmtui.gpu.specs import NVML, spec_problem

    if value is None:
        return (NVML,)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise loc.fail("server.gpus", 'must not be empty: "nvml", an exporter\'s URL, or a list of them')
    out: list[str] = []
    for item in items:
        dotted = "server.gpus"
        spec = _string(loc, dotted, item)
        assert spec is not None
        problem = spec_problem(spec)
        if problem is not None:
            raise loc.fail(dotted, problem)
        out.append(spec)
    return tuple(out)


def _nodes(loc: _Locator, value: Any, shell: bool, base: Path) -> tuple[NodeSpec, ...]:
    """The ``[[nodes]]`` list: each a name, a log source, its GPUs, and optionally launch/stop commands."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        raise loc.fail("nodes", "must be a list of tables: one [[nodes]] per node, each with name and log, "
                       "log_cmd or launch")
    out: list[NodeSpec] = []
    seen: set[str] = set()
    for rank, node in enumerate(value):
        table = f"nodes[{rank}]"
        _unknown(loc, table, node, _NODE_KEYS)
        name = _string(loc, f"{table}.name", node.get("name"))
        if name is None:
            raise loc.fail(table, "needs name = \"...\" (how the node is shown: node0, gpu-a1, ...)")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}", name):
            raise loc.fail(f"{table}.name", f"must be letters, digits, '.', '_' or '-' (at most 63), got {name!r}")
        if name in seen:
            raise loc.fail(f"{table}.name", f"{name!r} names two nodes; give each node its own name")
        seen.add(name)
        log = _path(loc, f"{table}.log", node.get("log"), base)
        log_cmd, log_cmd_text = _node_command(loc, f"{table}.log_cmd", node.get("log_cmd"), shell, rank)
        launch, launch_text = _node_command(loc, f"{table}.launch", node.get("launch"), shell, rank)
        stop, stop_text = _node_command(loc, f"{table}.stop", node.get("stop"), shell, rank)
        if log is not None and log_cmd is not None:
            raise loc.fail(f"{table}.log_cmd", "give log (a file) or log_cmd (a command), not both")
        if log is None and log_cmd is None and launch is None:
            raise loc.fail(table, "needs log (a file), log_cmd (a command printing the log) or launch "
                           "(its output is the log)")
        gpus = _string(loc, f"{table}.gpus", node.get("gpus")) or "nvml"
        if gpus != "nvml":
            try:
                parts = urlsplit(gpus)
            except ValueError as exc:
                raise loc.fail(f"{table}.gpus", f"is not a valid URL ({exc}): {gpus!r}") from exc
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise loc.fail(f"{table}.gpus", f'must be "nvml" or an exporter\'s http:// URL, got {gpus!r}')
        out.append(NodeSpec(name, rank, log, log_cmd, log_cmd_text, gpus, launch, launch_text, stop, stop_text))
    return tuple(out)


def _node_command(loc: _Locator, dotted: str, value: Any, shell: bool,
                  rank: int) -> tuple[tuple[str, ...] | None, str]:
    """A node's command: like server.command, with ``{node_rank}`` replaced by the node's rank."""
    if value is None:
        return None, ""
    if isinstance(value, str):
        value = value.replace(NODE_RANK, str(rank))
    elif isinstance(value, list):
        value = [v.replace(NODE_RANK, str(rank)) if isinstance(v, str) else v for v in value]
    return _command(loc, value, shell, dotted)


def _notify(value: Any, loc: _Locator) -> NotifyConfig:
    from symmtui.launch.notifyconf import parse_notify  # only a profile with [notify]

    return parse_notify(value, loc.fail)


def _entries(path: Path, value: Any) -> tuple[Rule, ...]:
    if value is None:
        return ()
    from symmtui.tables.catalogue import parse_entries  # the catalogue (~10 ms): only a profile with [rules]

    with patterns.budget(patterns.MAX_PROGRAM):  # a profile of costly patterns is refused, not compiled for minutes
        return parse_entries(value, str(path), user=True, key="rules.entry")


def _log_command(loc: _Locator, value: Any, shell: bool) -> LogCommand | None:
    """``log_cmd``: an argv list (run as it is), or a string (split like a shell would; run by /bin/sh
    with ``log_cmd_shell = true``, which also takes a list, joined)."""
    if value is None:
        return None
    from symmtui.logs.logcmd import LogCommand  # subprocess, pipes: only a profile with a log command

    argv, text = _command(loc, value, shell, dotted="server.log_cmd")
    assert argv is not None
    return LogCommand(argv, text, shell)


def _command(loc: _Locator, value: Any, shell: bool,
             dotted: str = "server.command") -> tuple[tuple[str, ...] | None, str]:
    if value is None:
        return None, ""
    parts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    size = sum(len(v) + 1 for v in parts if isinstance(v, str))
    if size > boundary.MAX_COMMAND_CHARS:
        raise loc.fail(dotted, f"is {size} characters long (at most {boundary.MAX_COMMAND_CHARS}); "
                       "put long arguments in a file the server reads")
    if isinstance(value, list):
        if not value or not all(isinstance(v, str) for v in value):
            raise loc.fail(dotted, "must be a non-empty list of strings (or one string)")
        if any("\0" in v for v in value):
            raise loc.fail(dotted, "must not contain NUL characters")
        if not value[0].strip():
            raise loc.fail(dotted, "the program name (first item) is empty")
        text = shlex.join(value)
        if shell:
            return ("/bin/sh", "-c", text), text
        return tuple(value), text
    s = _string(loc, dotted, value)
    assert s is not None
    if shell:
        return ("/bin/sh", "-c", s), s
    try:
        argv = shlex.split(s)
    except ValueError as exc:
        raise loc.fail(dotted, f"cannot split into arguments ({exc}); check the quoting") from exc
    if not argv:
        raise loc.fail(dotted, "is empty")
    return tuple(argv), s
