"""The system parts some tests need (sshd, Chromium, tmux) and the one rule for a missing one.

On a fresh machine a test that needs a part that is not installed is skipped, saying which and how to
get it. In CI (``CI=true``, which CI services and ``.ci/run`` set; .ci/run installs every part) the same
test fails instead: a part that went missing there would otherwise turn its tests into silent skips.

Tests ask with ``@pytest.mark.needs("tmux")`` (checked before the test's fixtures run, tests/conftest.py)
or, from a fixture, ``require("sshd")``. Where each part is looked for can be pointed elsewhere
(``SYMMTUI_TEST_SSHD``, ``SYMMTUI_TEST_CHROMIUM``, ``SYMMTUI_TEST_TMUX``): that is how the rule itself is
checked with a part hidden (tests/test_sysparts.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SSHD = os.environ.get("SYMMTUI_TEST_SSHD", "/usr/sbin/sshd")
CHROMIUM = os.environ.get("SYMMTUI_TEST_CHROMIUM", "/usr/bin/chromium")
TMUX = os.environ.get("SYMMTUI_TEST_TMUX") or shutil.which("tmux") or "tmux"


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def missing(part: str) -> str | None:
    """Why ``part`` cannot be used on this machine (what to install), or None when it can."""
    if part == "sshd":
        tools = [t for t in ("ssh", "ssh-keygen") if shutil.which(t) is None]
        if not _executable(SSHD) or tools:
            gone = ", ".join([SSHD] * (not _executable(SSHD)) + tools)
            return f"no {gone}: apt-get install openssh-server openssh-client (.ci/run installs them)"
        return None
    if part == "chromium":
        return None if _executable(CHROMIUM) else f"no {CHROMIUM}: apt-get install chromium (.ci/run installs it)"
    if part == "tmux":
        return None if _executable(TMUX) else "tmux is not installed: apt-get install tmux (.ci/run installs it)"
    if part == "script":
        return None if shutil.which("script") else "script is not installed: apt-get install util-linux"
    raise ValueError(f"unknown system part {part!r}")


def in_ci() -> bool:
    """True where a missing part is a failure, not a skip: ``CI`` set to true (or 1, yes)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require(*parts: str) -> None:
    """Skip the running test when one of ``parts`` is missing, saying why; fail it instead in CI."""
    for part in parts:
        why = missing(part)
        if why is None:
            continue
        if in_ci():
            pytest.fail(f"CI=true and a system part is missing ({why}): a skip here would hide the tests "
                        "that need it", pytrace=False)
        pytest.skip(why)


def end_tmux_server(socket: str) -> None:
    """The private tmux server ``-L socket`` (a test's own, never the user's) ends, and its socket file goes with it
    (tmux leaves the file behind in its folder)."""
    if not _executable(TMUX):
        return
    subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True, timeout=30, check=False)
    (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / socket).unlink(missing_ok=True)
