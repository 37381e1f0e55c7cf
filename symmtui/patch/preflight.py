"""Before a long load: will this launch command crash with ``KeyError: 12`` seconds in?"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from msgspec import Struct

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.patch.capability import Capability, key_text
from symmtui.patch.engine import check
from symmtui.patch.finder import find
from symmtui.patch.pyprobe import command_words
from symmtui.patch.report import CheckReport

SYMM_FLAG = "--enable-torch-symm-mem"
_TP_FLAGS = ("--tp-size", "--tp", "--tensor-parallel-size", "-tp")


class Prediction(Struct, frozen=True):
    """What the launch will do: ``crash`` (KeyError at distributed init) or ``off`` (feature silently off)."""

    outcome: Literal["crash", "off"]
    message: str
    fix: str
    package: str
    version: str | None
    capability: Capability
    report: CheckReport

    @property
    def will_crash(self) -> bool:
        """True for the KeyError prediction."""
        return self.outcome == "crash"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "outcome": self.outcome,
            "message": self.message,
            "fix": self.fix,
            "package": self.package,
            "version": self.version,
            "capability": str(self.capability),
            "check": self.report.to_json(),
        }


def launched_package(argv: Sequence[str]) -> str | None:
    """``sglang`` or ``vllm`` from ``python -m sglang.launch_server``, ``sglang serve``, ``vllm serve``..."""
    words = command_words(argv)
    for i, word in enumerate(words):
        base = os.path.basename(word)
        module = words[i + 1] if word == "-m" and i + 1 < len(words) else None
        for pkg in ("sglang", "vllm"):
            if base == pkg or (module is not None and (module == pkg or module.startswith(pkg + "."))):
                return pkg
    return None


def _flag_value(words: list[str], names: Sequence[str]) -> str | None:
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def tp_size(argv: Sequence[str]) -> int | None:
    """The tensor-parallel size the command asks for, None when not given (or not a number)."""
    value = _flag_value(command_words(argv), _TP_FLAGS)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def symm_mem_enabled(argv: Sequence[str]) -> bool:
    """Whether the command turns on torch symmetric memory (``--enable-torch-symm-mem``)."""
    for word in command_words(argv):
        if word == SYMM_FLAG:
            return True
        if word.startswith(SYMM_FLAG + "="):
            return word.split("=", 1)[1].strip().lower() not in ("0", "false", "no", "off")
    return False


def launch_python(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    """The interpreter the command runs: ``argv[0]`` if it is a python, else the shebang of its script.

    ``env``: the launch's environment (its PATH decides which ``python``/``sglang`` runs).
    """
    words = command_words(argv)
    if not words:
        return None
    path = (env or {}).get("PATH") or os.environ.get("PATH")
    first = words[0]
    if os.path.basename(first).startswith("python"):
        return shutil.which(first, path=path) or first
    script = shutil.which(first, path=path)
    if script is None:
        return None
    try:
        fd = boundary.open_regular(script, what="the server's script")
        try:
            line = os.read(fd, 512).split(b"\n", 1)[0]
        finally:
            os.close(fd)
    except (OSError, UserError):
        return None
    if not line.startswith(b"#!"):
        return None
    parts = line[2:].decode("utf-8", "replace").split()
    if not parts:
        return None
    if os.path.basename(parts[0]) == "env" and len(parts) > 1:
        return shutil.which(parts[1], path=path)
    return parts[0] if os.path.basename(parts[0]).startswith("python") else None


def preflight(
    argv: Sequence[str],
    capability: Capability | str | int | tuple[int, int],
    site: Path | None = None,
    *,
    python: str | None = None,
    nvlink: bool | None = None,
    include_off: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Prediction | None:
    """Predict the KeyError crash for this launch before it starts; None when it will not crash.

    Looks at the command (package, ``--enable-torch-symm-mem``, TP size: the communicator exists only
    when TP > 1), finds the install the command would use (``site``, ``python``, the command's own
    interpreter, or this one), and checks its tables without importing anything. With
    ``include_off`` also returns the "feature silently off" prediction. None also when the package
    can't be found or its layout is unknown: this function never blocks a launch on a guess.
    ``env`` / ``cwd``: the launch profile's (its PATH, PYTHONPATH and working dir decide what gets imported).
    """
    package = launched_package(argv)
    if package is None:
        return None
    if package == "sglang" and not symm_mem_enabled(argv):
        return None
    tp = tp_size(argv)
    if tp is not None and tp <= 1:
        return None
    words = command_words(argv)
    if tp is None and not any(w == "--config" or w.startswith("--config=") for w in words):
        return None
    cap = Capability.of(capability)
    try:
        if site is None:
            python = python or launch_python(argv, env)
            if python is not None:
                site, python = find(package, python=python, env=env, cwd=cwd, argv=words).root, None
        report = check(site, package, cap, python=python, nvlink=nvlink)
    except (UserError, OSError):
        return None
    k = key_text(report.key)
    release = f"{package} {report.version}" if report.version else package
    apply_cmd = f"symmtui patch apply --site {shlex.quote(str(report.root))} --package {package} --capability {cap}"
    if report.outcome == "crash":
        outcome: Literal["crash", "off"] = "crash"
        message = (
            f"this launch will crash with KeyError: {k} at distributed init, seconds after launch: "
            f"{release} has no capability {k} in its torch symmetric-memory tables"
        )
        fix = f"apply the SM120 patch ({apply_cmd}) or launch without {SYMM_FLAG}"
    elif include_off and report.outcome == "off" and report.state == "needed":
        outcome = "off"
        message = f"{release} will log 'Device capability {k} not supported' and run without torch symmetric memory"
        fix = f"apply the SM120 patch ({apply_cmd}) to turn it on (it needs NVLink multicast)"
    else:
        return None
    return Prediction(outcome, message, fix, package, report.version, cap, report)
