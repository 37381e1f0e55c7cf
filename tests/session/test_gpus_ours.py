"""The GPU side's "ours": a launch tracked while a sampling round walks the process table still counts at the next
round (a relaunched server listed as a "stranger" until the next refresh: the demo story's failure)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psutil

from symmtui.build import watch_spec
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.launch.state import LaunchRecord
from symmtui.session.gpus import Gpus
from symmtui.session.messages import GpuRound, SessionMessage


def test_a_launch_tracked_during_a_rounds_walk_is_ours_at_the_next_round(tmp_path: Path) -> None:
    server = subprocess.Popen(["sleep", "60"], start_new_session=True)  # the relaunched server, holding GPU memory
    try:
        module = load_standin("rtx-pro-6000-x8-pcie", clock=lambda: 1000.0)
        standin_host(module).set_load(0.5, server.pid, name="python3")
        nvml = Nvml(module, process_lookup=lambda pid: ("python3", ("python3", "-m", "sglang.launch_server")))
        snap = GpuSampler(nvml).sample_once()
        record = LaunchRecord("relaunch", "k", str(tmp_path / "p.toml"), server.pid, server.pid, server.pid,
                              psutil.Process(server.pid).create_time(), time.time(), ("sleep", "60"), "h",
                              str(tmp_path / "server.log"), str(tmp_path), None)
        rounds: list[SessionMessage] = []
        gpus = Gpus(watch_spec(tmp_path / "server.log"), rounds.append, nvml=nvml)
        walk = gpus._our_pids

        def walk_then_relaunch() -> list[int]:  # the relaunch's track() lands while this round walks
            pids = walk()
            gpus.track([record])
            return pids

        gpus._our_pids = walk_then_relaunch  # type: ignore[method-assign]
        gpus._on_sample(snap)  # the round that began before the relaunch: not ours yet
        gpus._our_pids = walk  # type: ignore[method-assign]
        gpus._on_sample(snap)  # the same GPU holders, the next round
        ours = [m.our_pids for m in rounds if isinstance(m, GpuRound)]
        assert ours == [frozenset(), frozenset({server.pid})], ours
        nvml.shutdown()
    finally:
        server.kill()
        server.wait()
