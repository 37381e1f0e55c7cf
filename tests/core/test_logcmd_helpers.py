"""A `--log-cmd` that starts helpers outside its process group (`setsid sleep`, a double fork): none of
them survives the `wait` (real processes, the real `wait` command line)."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import psutil


def _helpers(tag: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if cmd[:1] == ["sleep"] and tag in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(p)
    return out


def test_setsid_and_double_forked_helpers_of_a_log_command_are_gone_after_wait() -> None:
    tag = f"{300 + uuid.uuid4().int % 600}.{uuid.uuid4().int % 10**6:06d}"  # a unique sleep length
    script = (f"setsid sleep {tag} & (setsid sh -c 'sleep {tag}' &) ; sleep {tag} & "
              "echo 'server_args=ServerArgs(model_path=m, tp_size=2)'; exec sleep 600")
    proc = subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--log-cmd", f"sh -c \"{script}\"",
                             "--timeout", "3", "--stall", "0", "--no-record"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while len(_helpers(tag)) < 3:  # the three helpers are running while the wait runs
            assert time.monotonic() < deadline and proc.poll() is None, [p.info for p in _helpers(tag)]
            time.sleep(0.05)
        import os

        assert len({os.getsid(p.pid) for p in _helpers(tag)}) == 3  # two of them left the command's session
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.terminate()  # wait stops its log command on SIGTERM too
            proc.wait(30)
    assert proc.returncode == 124, out + err  # TIMED OUT: the log command never said ready
    deadline = time.monotonic() + 5
    while (left := _helpers(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], [p.info["cmdline"] for p in left]
