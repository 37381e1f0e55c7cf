"""What a bring-up ran on: versions (symmtui, sglang, vllm, torch, NCCL, driver), GPUs, the command, the env that matters.

One frozen :class:`EnvInfo` with a JSON form (``to_json`` / ``from_json``), captured once per launch or
attach by :func:`capture` (blocking: a child interpreter and NVML; run it off any UI loop). The bundle
recorder keeps it, ``symmtui report`` prints it as a table, and the launch history compares versions.

- The server's packages are asked of **the server's interpreter** (the profile command's python, or
  an attached pid's ``/proc/PID/exe``), never imported here: their place and version come from
  ``symmtui.patch.finder.locate`` (``PY -I`` + ``find_spec`` + dist-info, nothing imported), and the
  NCCL version from ``torch.cuda.nccl.version()`` in a second isolated ``PY -I`` child, only when
  torch was found there (importing torch runs its code, in that child only; it does not start CUDA).
- GPUs from NVML (``symmtui.gpu.facts``): names, compute capabilities, UUIDs, driver and CUDA driver version.
- The command (``redact_argv``) and the environment variables that matter: ``NCCL_*``, ``CUDA_*``,
  ``SGLANG_*``, ``VLLM_*``, ``TORCH_*``, ``PYTORCH_*`` with values (``redact_env``); ``HF_*`` and
  ``HUGGING_FACE_*`` by presence only (their values are never kept).

Whatever could not be read is ``None`` and a line in ``notes`` says why; capture never raises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from msgspec import Struct, field

from symmtui import __version__
from symmtui.aside import Aside
from symmtui.errors import UserError
from symmtui.gpu.facts import capabilities_of
from symmtui.gpu.results import NAType
from symmtui.proc.pidwatch import environ  # not proctree: psutil (~8 ms) stays out of a recorded `wait`
from symmtui.redact import redact, redact_argv, redact_env
from symmtui.tables import enginetable

if TYPE_CHECKING:
    from symmtui.gpu.nvml import Nvml
    from symmtui.launch.profile import Profile

def packages() -> tuple[str, ...]:
    """The packages whose versions a bring-up records: every engine's (the engine table's ``package``) and torch."""
    return (*enginetable.table().packages(), "torch")


VALUE_PREFIXES = ("NCCL_", "CUDA_", "SGLANG_", "VLLM_", "TORCH_", "PYTORCH_")
PRESENCE_PREFIXES = ("HF_", "HUGGING_FACE_")
PRESENT = "(set)"
PROBE_TIMEOUT = 60.0  # importing torch from a cold disk can take tens of seconds
MAX_VALUE = 512  # characters kept of one variable's value

# Runs as ``PY -I -c NCCL_PROBE DIR``: the stdlib first, then torch imported from DIR (where the
# locate probe found it: put first only when it is not already on the isolated path).
NCCL_PROBE = (
    "import sys, json\n"
    "d = sys.argv[1]\n"
    "if d not in sys.path:\n"
    "    sys.path.insert(0, d)\n"
    "out = {'python': sys.version.split()[0]}\n"
    "import torch\n"
    "out['torch'] = str(getattr(torch, '__version__', ''))\n"
    "out['cuda'] = getattr(getattr(torch, 'version', None), 'cuda', None)\n"
    "try:\n"
    "    v = torch.cuda.nccl.version()\n"
    "    out['nccl'] = '.'.join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)\n"
    "except Exception as exc:\n"
    "    out['nccl_error'] = type(exc).__name__ + ': ' + str(exc)[:200]\n"
    "sys.stdout.write(json.dumps(out) + '\\n')\n"
)


class GpuFact(Aside, Struct, frozen=True):
    """One GPU as NVML named it: ``capability`` as "12.0", ``memory_mib`` total, ``uuid`` (None where NVML
    could not say): the card itself, so a history can tell another card in the same slot."""

    index: int
    name: str | None
    capability: str | None
    memory_mib: int | None
    uuid: str | None = None
    """Not in the JSON form (a bundle is shared: its capture reads back equal without it); the history keeps it."""
    ASIDE: ClassVar[tuple[str, ...]] = ("uuid",)


class ServerCommand(Struct, frozen=True):
    """How the server runs: its words, its whole environment, its directory and interpreter (None: unknown)."""

    argv: tuple[str, ...] | None
    env: Mapping[str, str]
    cwd: Path | None = None
    python: str | None = None
    text: str | None = None

    @classmethod
    def from_profile(cls, profile: Profile) -> ServerCommand:
        """A launch profile's command: our environment plus the profile's ``env``, its ``cwd``."""
        from symmtui.patch.preflight import launch_python  # the patch engine's finder: a recorded launch

        env = {**os.environ, **profile.env}
        argv = profile.argv
        python = launch_python(argv, env) if argv else None
        return cls(argv, env, profile.cwd, python, profile.command_text or None)

    @classmethod
    def from_pid(cls, pid: int) -> ServerCommand:
        """A running server's command, environment, directory and interpreter from ``/proc/PID`` (what we may read)."""
        base = Path(f"/proc/{pid}")
        argv: tuple[str, ...] | None = None
        env: dict[str, str] = {}
        cwd: Path | None = None
        python: str | None = None
        try:
            words = (base / "cmdline").read_bytes().split(b"\0")
            argv = tuple(w.decode("utf-8", "replace") for w in words if w) or None
        except OSError:
            pass  # gone or not ours: the command stays unknown (None), as documented
        for item in (environ(pid) or b"").split(b"\0"):  # another user's process: unknown (empty)
            name, eq, value = item.decode("utf-8", "replace").partition("=")
            if eq:
                env[name] = value
        try:
            cwd = Path(os.readlink(base / "cwd"))
        except OSError:
            cwd = None
        try:
            exe = os.readlink(base / "exe")
            python = exe if os.path.basename(exe).startswith("python") else None
        except OSError:
            python = None
        return cls(argv, env, cwd, python)


class EnvInfo(Struct, frozen=True):
    """The environment of one bring-up, redacted; JSON through :meth:`to_json` / :meth:`from_json`."""

    taken_at: float
    symmtui: str
    python: str | None = None
    """The server's interpreter (a path), None when not known (an attach without a pid)."""
    python_version: str | None = None
    versions: tuple[tuple[str, str | None], ...] = ()
    """(package, version) for every engine's package and torch as the server's interpreter has them; None: not installed."""
    torch_cuda: str | None = None
    nccl: str | None = None
    driver: str | None = None
    cuda_driver: str | None = None
    gpus: tuple[GpuFact, ...] = ()
    capability: str | None = None
    """The capability the SM120 patch targets (the highest the host has)."""
    argv: tuple[str, ...] | None = None
    command_text: str | None = None
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = field(default=())

    def version(self, package: str) -> str | None:
        """The version of ``package`` (an engine's, torch), None when not installed or not known."""
        return dict(self.versions).get(package)

    def rows(self) -> list[tuple[str, str]]:
        """(what, value) rows for a report's environment table, in a stable order; nothing secret."""
        rows: list[tuple[str, str]] = [("symmtui", self.symmtui)]
        if self.python:
            rows.append(("python", f"{self.python}" + (f" ({self.python_version})" if self.python_version else "")))
        command = " ".join(self.argv) if self.argv else self.command_text or ""
        engine = enginetable.table().engine(enginetable.table().by_command(command)) if command else None
        for name, ver in self.versions:
            if ver is not None or name == "torch" or (engine is not None and name == engine.package):
                rows.append((name, ver if ver is not None else "not installed"))
        if self.torch_cuda:
            rows.append(("torch CUDA", self.torch_cuda))
        if self.nccl:
            rows.append(("NCCL", self.nccl))
        rows.append(("driver", self.driver or "unknown"))
        rows.append(("CUDA (driver)", self.cuda_driver or "unknown"))
        for gpu in self.gpus:
            cap = f", sm {gpu.capability}" if gpu.capability else ""
            mem = f", {gpu.memory_mib} MiB" if gpu.memory_mib is not None else ""
            rows.append((f"GPU {gpu.index}", f"{gpu.name or 'unknown'}{cap}{mem}"))
        if self.argv:
            rows.append(("command", " ".join(self.argv)))
        elif self.command_text:
            rows.append(("command", self.command_text))
        if self.cwd:
            rows.append(("cwd", self.cwd))
        rows.extend((name, value) for name, value in self.env)
        return rows

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the bundle's ``environment``)."""
        return {
            "taken_at": self.taken_at,
            "symmtui": self.symmtui,
            "python": self.python,
            "python_version": self.python_version,
            "versions": {name: ver for name, ver in self.versions},
            "torch_cuda": self.torch_cuda,
            "nccl": self.nccl,
            "driver": self.driver,
            "cuda_driver": self.cuda_driver,
            "gpus": [
                {"index": g.index, "name": g.name, "capability": g.capability, "memory_mib": g.memory_mib}
                for g in self.gpus  # not the UUIDs: a bundle is shared; the launch history keeps them
            ],
            "capability": self.capability,
            "argv": list(self.argv) if self.argv is not None else None,
            "command_text": self.command_text,
            "cwd": self.cwd,
            "env": {name: value for name, value in self.env},
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Any) -> EnvInfo:
        """Read :meth:`to_json`'s form back (a bundle); ValueError naming the field when it is not that form.

        What is read back is redacted again: a bundle written by hand or by an older symmtui holds no
        secret that a report would print.
        """
        if not isinstance(data, dict):
            raise ValueError("environment: not an object")
        versions = _mapping(data, "versions")
        env = _mapping(data, "env")
        gpus_raw = data.get("gpus") or []
        if not isinstance(gpus_raw, list):
            raise ValueError("environment.gpus: not a list")
        gpus = []
        for i, g in enumerate(gpus_raw):
            if not isinstance(g, dict):
                raise ValueError(f"environment.gpus[{i}]: not an object")
            mem = g.get("memory_mib")
            gpus.append(GpuFact(_int(g.get("index"), f"environment.gpus[{i}].index"), _opt(g, "name"),
                                _opt(g, "capability"), mem if isinstance(mem, int) else None))
        argv = data.get("argv")
        if argv is not None and not (isinstance(argv, list) and all(isinstance(w, str) for w in argv)):
            raise ValueError("environment.argv: not a list of strings")
        notes = data.get("notes") or []
        taken = data.get("taken_at", 0.0)
        return cls(
            taken_at=float(taken) if isinstance(taken, int | float) else 0.0,
            symmtui=_opt(data, "symmtui") or "unknown",
            python=_opt(data, "python"),
            python_version=_opt(data, "python_version"),
            versions=tuple((str(k), v if isinstance(v, str) else None) for k, v in versions.items()),
            torch_cuda=_opt(data, "torch_cuda"),
            nccl=_opt(data, "nccl"),
            driver=_opt(data, "driver"),
            cuda_driver=_opt(data, "cuda_driver"),
            gpus=tuple(gpus),
            capability=_opt(data, "capability"),
            argv=redact_argv(argv) if argv is not None else None,
            command_text=redact(c) if (c := _opt(data, "command_text")) else None,
            cwd=_opt(data, "cwd"),
            env=tuple((str(k), shown_value(str(k), str(v))) for k, v in env.items()),
            notes=tuple(redact(str(n)) for n in notes) if isinstance(notes, list) else (),
        )


def _mapping(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise ValueError(f"environment.{key}: not an object")
    return value


def _opt(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: not a whole number")
    return value


def env_that_matters(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables a bring-up report needs, sorted by name, redacted; HF_* only as present."""
    return tuple((name, shown_value(name, env[name])) for name in sorted(env)
                 if name.startswith(PRESENCE_PREFIXES + VALUE_PREFIXES))


def shown_value(name: str, value: str) -> str:
    """One variable's value as a bundle keeps it: HF_* as present only, others redacted and capped."""
    if name.startswith(PRESENCE_PREFIXES):
        return PRESENT
    value = redact_env(name, value)
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE] + "…"


def _probe_torch(python: str, torch_dir: Path, command: ServerCommand, timeout: float) -> dict[str, Any]:
    """Ask ``python`` (isolated) for torch's version, its CUDA and NCCL versions; raises OSError / ValueError."""
    env = dict(command.env) if command.env else dict(os.environ)
    try:
        proc = subprocess.run(
            [python, "-I", "-c", NCCL_PROBE, str(torch_dir)],
            capture_output=True, text=True, timeout=timeout, check=False, env=env,
            cwd=command.cwd if command.cwd is not None and command.cwd.is_dir() else None,
        )
    except subprocess.TimeoutExpired as exc:
        raise ValueError(f"importing torch took over {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"importing torch failed: {tail[:200]}")
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as exc:
        raise ValueError("the torch probe gave an unreadable answer") from exc
    if not isinstance(data, dict):
        raise ValueError("the torch probe gave an unreadable answer")
    return data


def _gpus(nvml: Nvml | None, notes: list[str]) -> tuple[tuple[GpuFact, ...], str | None, str | None, str | None]:
    """(GPUs, driver, CUDA driver, the patch's capability) from NVML; notes say why when not."""
    if nvml is None or not nvml.available():
        reason = "NVML unavailable" if nvml is None else (nvml.unavailable_reason or "NVML unavailable")
        notes.append(f"GPUs not read: {reason}")
        return (), None, None, None
    infos = nvml.infos()
    gpus = tuple(
        GpuFact(
            i.index,
            None if isinstance(i.name, NAType) else str(i.name),
            None if isinstance(i.capability, NAType) else f"{i.capability[0]}.{i.capability[1]}",
            None if isinstance(i.memory_total, NAType) else -(-i.memory_total // (1024 * 1024)),
            None if isinstance(i.uuid, NAType) else str(i.uuid),
        )
        for i in infos
    )
    top = capabilities_of(infos).for_patch
    driver = nvml.driver_version()
    cuda = nvml.cuda_driver_version()
    return (gpus, None if isinstance(driver, NAType) else driver, None if isinstance(cuda, NAType) else cuda,
            f"{top[0]}.{top[1]}" if top else None)


def capture(
    command: ServerCommand | None,
    *,
    nvml: Nvml | None = None,
    nccl: bool = True,
    timeout: float = PROBE_TIMEOUT,
) -> EnvInfo:
    """The environment of a bring-up run by ``command`` (None: only a log is known) on this host's ``nvml``.

    Blocking (one or two child interpreters, NVML); never raises: what could not be read is None with a
    note. ``nccl`` False skips the torch import (the NCCL/torch-CUDA versions stay None).
    """
    notes: list[str] = []
    versions: tuple[tuple[str, str | None], ...] = ()
    python_version = torch_cuda = nccl_version = None
    python = command.python if command is not None else None
    if command is None:
        notes.append("server command not known (an attach to a log): package versions not read")
    elif python is None:
        notes.append("the server's python is not known (not a python command): package versions not read")
    else:
        # the patch engine's finder (~45 ms): a capture with a python to read
        from symmtui.patch.finder import locate

        try:
            wanted = packages()
            found = {i.package: i for i in locate(list(wanted), python=python, env=command.env,
                                                  cwd=command.cwd, argv=command.argv)}
        except (UserError, OSError) as exc:
            notes.append(f"package versions not read: {exc}")
            found = None
        if found is not None:
            versions = tuple((p, (found[p].version or "unknown") if p in found else None) for p in wanted)
            torch = found.get("torch")
            if torch is not None and nccl:
                try:
                    data = _probe_torch(python, torch.root.parent, command, timeout)
                except (OSError, ValueError) as exc:
                    notes.append(f"NCCL version not read: {exc}")
                else:
                    python_version = _opt(data, "python")
                    torch_cuda = _opt(data, "cuda")
                    nccl_version = _opt(data, "nccl")
                    if "nccl_error" in data:
                        notes.append(f"NCCL version not read: {data['nccl_error']}")
    gpus, driver, cuda_driver, capability = _gpus(nvml, notes)
    env = env_that_matters(command.env) if command is not None else ()
    return EnvInfo(
        taken_at=time.time(),
        symmtui=__version__,
        python=python,
        python_version=python_version,
        versions=versions,
        torch_cuda=torch_cuda,
        nccl=nccl_version,
        driver=driver,
        cuda_driver=cuda_driver,
        gpus=gpus,
        capability=capability,
        argv=redact_argv(command.argv) if command is not None and command.argv is not None else None,
        command_text=redact(command.text) if command is not None and command.text else None,
        cwd=str(command.cwd) if command is not None and command.cwd is not None else None,
        env=env,
        notes=tuple(redact(n) for n in notes),
    )


def this_process() -> ServerCommand:
    """This interpreter as the 'server' (the demo, whose simulated server is ``sys.executable -m ...``)."""
    return ServerCommand((sys.executable,), dict(os.environ), Path.cwd(), sys.executable)
