"""Helpers for launcher tests: free ports, profiles that run the demo server, event-driven waits."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from symmtui.launch.profile import Profile, load_profile


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def demo_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "symmtui.demo.server", *args]


def _toml(value: Any) -> str:
    return json.dumps(value)  # JSON strings/lists/numbers/bools are valid TOML here


def write_profile(tmp: Path, *, name: str = "symmtui.toml", env: dict[str, str] | None = None,
                  rules: dict[str, list[str]] | None = None, **server: Any) -> Path:
    lines = ["[server]"]
    for k, v in server.items():
        if v is not None:
            lines.append(f"{k} = {_toml(str(v) if isinstance(v, Path) else v)}")
    if env:
        lines.append("[server.env]")
        lines += [f"{k} = {_toml(v)}" for k, v in env.items()]
    if rules:
        lines.append("[rules]")
        lines += [f"{k} = {_toml(v)}" for k, v in rules.items()]
    path = tmp / name
    path.write_text("\n".join(lines) + "\n")
    return path


def demo_config(tmp: Path, *args: str, port: int | None = None, speed: float = 400.0, shards: int = 5,
                **server: Any) -> Path:
    """A profile file launching the demo server fast on a free loopback port (url set, grace 2 s, timeout 60 s)."""
    port = port or free_port()
    argv = demo_argv("--speed", str(speed), "--shards", str(shards), "--tp", "2", "--port", str(port), *args)
    server.setdefault("log_dir", tmp / "logs")
    server.setdefault("url", f"http://127.0.0.1:{port}/health")
    server.setdefault("grace", 2)
    server.setdefault("timeout", 60)
    return write_profile(tmp, command=argv, **server)


def demo_profile(tmp: Path, *args: str, **kwargs: Any) -> Profile:
    """:func:`demo_config`, loaded."""
    return load_profile(demo_config(tmp, *args, **kwargs))


@pytest.fixture(autouse=True)
def stop_at_end(tmp_path: Path) -> Iterator[None]:
    """Autouse where imported: what a failing CLI test launched from ``tmp_path/symmtui.toml`` is stopped
    before the leftover check."""
    yield
    cfg = tmp_path / "symmtui.toml"
    if cfg.exists():
        run_cli("stop", "--config", str(cfg), "--grace", "1", "--port-timeout", "1")


def wait_until(cond: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def log_contains(path: Path | str, text: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return text in Path(path).read_text(errors="replace")
        except FileNotFoundError:
            return False
    return check


def run_cli(*args: str, timeout: float = 120.0, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `symmtui` command line in a child process (stdout and stderr captured)."""
    import os

    return subprocess.run([sys.executable, "-m", "symmtui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=dict(os.environ))
