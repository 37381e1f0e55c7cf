"""Run py-spy on many processes at once, each under a time limit, and read its JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from symmtui.errors import UserError
from symmtui.stacks.model import Frame, ProcDump, Status, ThreadStack

DEFAULT_LIMIT = 10.0  # seconds per process (a native dump of a big process takes a few)
MAX_WORKERS = 32
PYSPY_ENV = "SYMMTUI_PYSPY"
"""Path of the py-spy binary to use instead of the one installed with symmtui."""


def find_pyspy() -> str:
    """The py-spy binary: $SYMMTUI_PYSPY, the one installed beside this interpreter, else PATH."""
    chosen = os.environ.get(PYSPY_ENV)
    if chosen:
        if not os.access(chosen, os.X_OK):
            raise UserError(f"${PYSPY_ENV}={chosen} is not an executable file; point it at py-spy or unset it")
        return chosen
    for scripts in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        cand = Path(scripts) / "py-spy"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("py-spy")
    if found is None:
        raise UserError("py-spy not found: install it (pip install py-spy) or set $SYMMTUI_PYSPY to its path")
    return found


def classify(stderr: str, returncode: int) -> tuple[Status, str]:
    """py-spy's failure text to a status and one line (its Rust backtrace left out)."""
    text = stderr.strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), f"py-spy exited {returncode}")
    low = text.lower()
    if "permission denied" in low or "operation not permitted" in low or "os error 13" in low or "os error 1)" in low:
        return "denied", "permission denied"
    if "no such file or directory" in low or "no such process" in low or "os error 3)" in low:
        return "gone", "the process ended"
    if "failed to find python version" in low or "failed to find a python interpreter" in low:
        return "not-python", "not a Python process"
    return "error", first.removeprefix("Error: ")


def _frames(raw: Sequence[dict[str, Any]]) -> tuple[Frame, ...]:
    out: list[Frame] = []
    for f in raw:
        filename = str(f.get("filename") or "")
        short = str(f.get("short_filename") or os.path.basename(filename) or "?")
        line = f.get("line")
        native = not filename.endswith(".py") and not filename.startswith("<")
        out.append(Frame(str(f.get("name") or "?"), filename, short, int(line) if isinstance(line, int) else 0,
                         native and bool(filename)))
    return tuple(out)


def parse(pid: int, stdout: str) -> tuple[ThreadStack, ...]:
    """py-spy ``dump --json`` output to threads (those of ``pid``; py-spy lists only the target's)."""
    data = json.loads(stdout)
    if not isinstance(data, list):
        raise ValueError("py-spy's JSON is not a list of threads")
    threads: list[ThreadStack] = []
    for t in data:
        if not isinstance(t, dict):
            continue
        tid = t.get("os_thread_id") or t.get("thread_id") or 0
        threads.append(ThreadStack(int(tid), str(t.get("thread_name") or ""), bool(t.get("active")),
                                   _frames(t.get("frames") or ())))
    return tuple(threads)


def dump_one(pid: int, *, native: bool = False, limit: float = DEFAULT_LIMIT, pyspy: str | None = None,
             cmdline: str = "") -> ProcDump:
    """One process's stacks (py-spy pauses it for the moment of the read)."""
    exe = pyspy or find_pyspy()
    argv = [exe, "dump", "--pid", str(pid), "--json"]
    if native:
        argv.append("--native")
    t0 = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, check=False,
                              stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        return ProcDump(pid, cmdline, "timeout", f"py-spy gave no answer in {limit:g} s",
                        seconds=time.monotonic() - t0)
    except OSError as exc:
        return ProcDump(pid, cmdline, "error", f"could not run py-spy: {exc}", seconds=time.monotonic() - t0)
    took = time.monotonic() - t0
    if done.returncode != 0:
        status, detail = classify(done.stderr, done.returncode)
        return ProcDump(pid, cmdline, status, detail, seconds=took)
    try:
        threads = parse(pid, done.stdout)
    except (ValueError, TypeError) as exc:
        return ProcDump(pid, cmdline, "error", f"unreadable py-spy output ({exc})", seconds=took)
    return ProcDump(pid, cmdline, "ok", threads=threads, seconds=took)


def dump_many(pids: Sequence[tuple[int, str]], *, native: bool = False, limit: float = DEFAULT_LIMIT,
              workers: int | None = None,
              on_done: Callable[[ProcDump], None] | None = None) -> list[ProcDump]:
    """Every process at once (a thread per py-spy run), each under ``limit``; in the order given."""
    if not pids:
        return []
    exe = find_pyspy()
    n = max(1, min(workers or MAX_WORKERS, len(pids)))

    def one(item: tuple[int, str]) -> ProcDump:
        d = dump_one(item[0], native=native, limit=limit, pyspy=exe, cmdline=item[1])
        if on_done is not None:
            on_done(d)
        return d

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="symmtui-pyspy") as pool:
        return list(pool.map(one, pids))
