"""A `--log-cmd` that starts helpers outside its process group (`setsid sleep`, a double fork): none of
them survives the `wait`, whether it ends on its verdict or on SIGTERM / SIGHUP (real processes, the
real `wait` command line, real signals)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import psutil
import pytest


def _helpers(tag: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if cmd[:1] == ["sleep"] and tag in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(p)
    return out


def _wait_with_helpers(timeout: str) -> tuple[subprocess.Popen[str], str]:
    """`symmtui wait --log-cmd` whose command started three helpers (two of them in sessions of their own),
    once they all run; with the tag their command lines carry."""
    tag = f"{300 + uuid.uuid4().int % 600}.{uuid.uuid4().int % 10**6:06d}"  # a unique sleep length
    script = (f"setsid sleep {tag} & (setsid sh -c 'sleep {tag}' &) ; sleep {tag} & "
              "echo 'server_args=ServerArgs(model_path=m, tp_size=2)'; exec sleep 600")
    proc = subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--log-cmd", f"sh -c \"{script}\"",
                             "--timeout", timeout, "--stall", "0", "--no-record"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while len(_helpers(tag)) < 3:  # the three helpers are running while the wait runs
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"the helpers never all ran: {[p.info for p in _helpers(tag)]}")
        time.sleep(0.05)
    return proc, tag


def _none_left(tag: str) -> None:
    deadline = time.monotonic() + 5
    while (left := _helpers(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], [p.info["cmdline"] for p in left]


def test_setsid_and_double_forked_helpers_of_a_log_command_are_gone_after_wait() -> None:
    proc, tag = _wait_with_helpers("3")
    try:
        assert len({os.getsid(p.pid) for p in _helpers(tag)}) == 3  # two of them left the command's session
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.terminate()  # wait stops its log command on SIGTERM too
            proc.wait(30)
    assert proc.returncode == 124, out + err  # TIMED OUT: the log command never said ready
    _none_left(tag)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_wait_ended_by_a_signal_stops_its_log_command_and_every_helper(sig: signal.Signals) -> None:
    """`timeout 60 symmtui wait --log-cmd 'docker logs -f ...'` sends SIGTERM at 60 s; a closed ssh session
    SIGHUP. Either used to kill the wait at once and leave the log command and its helpers running."""
    proc, tag = _wait_with_helpers("60")
    try:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 128 + sig, out + err
    assert "Traceback" not in err, err
    _none_left(tag)
