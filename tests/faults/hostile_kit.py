"""Running the real CLI as a child with hostile input: bounded time and memory, stderr judged."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXIT_CODES = frozenset({0, 1, 2, 3, 4, 124, 130})  # the documented set (docs/faults.md)
MAX_ERROR_CHARS = 1000
MEMORY_LIMIT = 2 << 30  # RLIMIT_AS of the child: a runaway read dies here instead of swapping


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _limit_memory_and_close_stdout() -> None:
    _limit_memory()
    os.close(1)  # `symmtui ... >&-`


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 30,
    stdout: int | None = subprocess.PIPE,
    stdin: int | None = subprocess.DEVNULL,
    close_stdout: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m symmtui ARGS`` with stdin from /dev/null (no terminal), under RLIMIT_AS and a timeout."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full.pop("SYMMTUI_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "symmtui", *args], stdin=stdin, stdout=stdout,
        stderr=subprocess.PIPE, env=full, cwd=cwd or ROOT, timeout=timeout,
        preexec_fn=_limit_memory_and_close_stdout if close_stdout else _limit_memory,
        check=False,
    )


def one_error_line(r: subprocess.CompletedProcess[bytes]) -> str:
    """Assert the child failed the documented way: a code from the set, one bounded `symmtui: error:`
    line on stderr, no traceback; return that line."""
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode in EXIT_CODES, (r.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    lines = err.splitlines()
    assert len(lines) == 1, err[-2000:]
    assert lines[0].startswith("symmtui: error: "), lines[0][:500]
    assert len(lines[0]) <= MAX_ERROR_CHARS, len(lines[0])
    assert "\x1b" not in lines[0] and "\x07" not in lines[0]
    return lines[0]
