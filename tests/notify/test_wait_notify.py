"""`symmtui wait` with a profile's [notify]: the real command line posts to a real loopback server; a failing
webhook is one warning line and `wait` still exits with its verdict's code, within the flush bound."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui.notify.notifier import FLUSH_BOUND
from tests.notify.kit import KEYERROR_LOG, READY_LOG, TOKEN, Receiver, receiver


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    with receiver() as rec:
        yield rec


def _wait(tmp_path: Path, log: Path, notify: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text(f'[server]\nlog = "{log}"\n\n[notify]\n{notify}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "DISPLAY", "WAYLAND_DISPLAY")}
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "symmtui", "wait", "--config", str(cfg), "--no-record", *extra],
                          capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    return done, time.monotonic() - t0


def test_wait_posts_the_crash_to_the_profiles_webhook(tmp_path: Path, hooks: Receiver) -> None:
    before = len(hooks.got)
    done, _ = _wait(tmp_path, KEYERROR_LOG, f'webhook = "{hooks.url("/topic-" + TOKEN)}"\nformat = "ntfy"')
    assert done.returncode == 1, done.stderr
    assert "CRASHED after" in done.stdout and done.stderr == ""
    got = hooks.wait_for(before + 1)[-1]
    assert got.path == "/" and got.body["topic"] == "topic-" + TOKEN and got.body["priority"] == 4
    assert re.match(r"CRASHED after \d+\.\d s", str(got.body["message"]))  # 0.0 s, or more on a loaded machine
    assert "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)" in str(got.body["message"])


def test_a_failing_webhook_is_one_warning_and_wait_keeps_its_exit_code(tmp_path: Path, hooks: Receiver) -> None:
    hooks.plan["/down/" + TOKEN] = ["500", "hang"]
    done, took = _wait(tmp_path, READY_LOG, f'webhook = "{hooks.url("/down/" + TOKEN)}"\ntimeout = 0.3\nretries = 1',
                       "--notify")
    assert done.returncode == 0 and "READY after" in done.stdout
    assert done.stderr.splitlines() == [f"symmtui: warning: webhook http://127.0.0.1:{hooks.port}/… failed: "
                                        "HTTP 500, then no answer within 0.3 s (2 attempts)"]
    assert TOKEN not in done.stdout + done.stderr
    assert took < FLUSH_BOUND + 5  # startup plus at most the bounded flush, never the webhook's own pace
