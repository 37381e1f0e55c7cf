"""The demo's scenario: a temp dir with sandbox tables, a profile for the simulated server, the NVML
stand-in driven by the server's status file. ``symmtui.build.demo_spec`` makes the Session's spec of it
(the first launch dies with KeyError: 12).

Everything real except the outside world: the Session's real Supervisor launches ``python -m
symmtui.demo.server`` (via ``sys.executable``), the real engine follows its log and probes its
/health, the real patcher edits the sandbox tables. Nothing outside the temp dir is touched: the
caller points XDG_STATE_HOME/XDG_CONFIG_HOME into it first (``isolate_state``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

from msgspec import Struct

from symmtui import paths
from symmtui.demo.sandbox import write_sandbox
from symmtui.errors import UserError
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.gpu.standin.host import StandinHost
from symmtui.judge.readiness import DEFAULT_STALL, DEFAULT_TIMEOUT
from symmtui.launch.profile import Profile, load_profile
from symmtui.proc.pidwatch import process_exit_status

SCENARIO = "rtx-pro-6000-x8-pcie"
BASE_SPEED = 8.0  # the simulated server at speed 8 loads in about a minute: the demo's --speed 1
CAPABILITY = 12
HOST_NAME = "demo-host"
PROFILE_NAME = "demo (simulated GLM-5, TP8)"
STORIES = ("crash", "hang", "fix")  # KeyError: 12 + patch; one rank hangs; DeepGEMM + profile env fix
HANG_RANK = 5
HANG_STALL = 10.0  # seconds of silence before STALLED in the hang story at --speed 1
MODEL_SHARE = 0.88  # the stand-in's model footprint is this fraction of each GPU (its mem_fraction)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def isolate_state(root: Path) -> None:
    """Point symmtui's state and config dirs into the demo's temp dir (this process only); what the user saves
    still goes to their own state dir (``paths.user_state_dir``)."""
    paths.keep_user_state(root / "xdg_state_home")
    for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        d = root / var.lower()
        d.mkdir(mode=0o700, exist_ok=True)
        os.environ[var] = str(d)


def write_profile(root: Path, *, speed: float, port: int, site: Path, status: Path, story: str = "crash") -> Path:
    """The demo's launch profile: the simulated server, its log dir and /health URL, all in `root`.

    The hang story's server hangs its first launch (rank TP5 in NCCL init) and comes up on the next. The fix
    story's server dies in DeepGEMM (KeyError: '120a') until the profile sets SGLANG_ENABLE_JIT_DEEPGEMM=0.
    """
    server_speed = BASE_SPEED * speed
    command = [
        sys.executable, "-m", "symmtui.demo.server",
        "--speed", f"{server_speed:g}",
        "--port", str(port),
        "--status-file", str(status),
        "--tp", "8",
        "--exit-with", str(os.getpid()),  # this process launches it (the dashboard): the server ends with it
    ]
    if story == "hang":
        command += ["--hang-rank", str(HANG_RANK), "--hang-once", str(root / "hung-once")]
    elif story == "fix":
        command += ["--deepgemm-sm120"]
    else:
        command += ["--sandbox", str(site), "--capability", str(CAPABILITY)]
    stall = max(2.0, HANG_STALL / speed) if story == "hang" else max(30.0, DEFAULT_STALL / speed)
    lines = [
        "# symmtui demo profile (written by `symmtui demo`; lives in a temp dir)",
        "[server]",
        "command = " + json.dumps(command),
        f"log_dir = {json.dumps(str(root / 'logs'))}",
        f'url = "http://127.0.0.1:{port}/health"',
        f"timeout = {max(60.0, DEFAULT_TIMEOUT / speed):.0f}",
        f"stall = {stall:.0f}",
        "grace = 5",
    ]
    path = root / "symmtui.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class StandinDriver:
    """Keeps the NVML stand-in in step with the simulated server: its memory fills as weights load."""

    def __init__(self, host: StandinHost, status: Path, interval: float = 0.2) -> None:
        self.host = host
        self.status = status
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="symmtui-demo-driver", daemon=True)
        self._last: tuple[int, float] | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def step(self) -> None:
        """Read the status file once and set the stand-in's load (0 when the server is gone)."""
        try:
            data = json.loads(self.status.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        pid = int(data.get("pid", 0))
        alive = pid > 0 and process_exit_status(pid)[0] and data.get("state") != "crashed"
        fraction = min(1.0, float(data.get("memory_fraction", 0.0)) / MODEL_SHARE) if alive else 0.0
        key = (pid if alive else 0, round(fraction, 3))
        if key != self._last:
            self._last = key
            self.host.set_load(fraction, pid if alive else None, name="python3 -m sglang.launch_server (demo)")

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.step()


class Demo(Struct):
    """One demo: where it lives and the real parts it runs (the Session stops its server and owns its NVML)."""

    root: Path
    profile: Profile
    nvml: Nvml
    host: StandinHost
    driver: StandinDriver
    site: Path
    speed: float

    def close(self) -> None:
        """Stop the driver; remove the temp dir (after the Session stopped the server)."""
        self.driver.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def build_demo(speed: float = 1.0, *, root: Path | None = None, isolate: bool = True, story: str = "crash") -> Demo:
    """Set up the temp dir, the sandbox tables, the profile, the stand-in and its driver."""
    if not speed > 0:
        raise UserError(f"--speed must be a positive number, got {speed!r} (1 = a load of about a minute)")
    if story not in STORIES:
        raise UserError(f"no demo story {story!r}: pick one of {', '.join(STORIES)}")
    root = Path(tempfile.mkdtemp(prefix="symmtui-demo-")) if root is None else root
    if isolate:
        isolate_state(root)
    site = root / "site-packages"
    sandbox = write_sandbox(site)
    status = root / "server-status.json"
    port = free_port()
    profile = load_profile(write_profile(root, speed=speed, port=port, site=sandbox.site, status=status, story=story))
    module = load_standin(SCENARIO)
    host = standin_host(module)
    nvml = Nvml(module)
    driver = StandinDriver(host, status)
    driver.start()
    return Demo(root, profile, nvml, host, driver, sandbox.site, speed)
