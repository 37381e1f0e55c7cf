"""The 2-node story's profile: a TP16 simulated server over two "nodes" (two local server processes,
``--nnodes 2 --node-rank N``); node 1's rank TP13 hangs in NCCL init on the first launch, the relaunch comes up.

Everything real but the second machine: each node's ``launch`` is the simulated server run here (a real
profile would say ``ssh NODE python -m sglang.launch_server ...``), its output is the node's log.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from msgspec import Struct

from symmtui.demo.exposition import ExpositionServer
from symmtui.demo.story import BASE_SPEED, HANG_STALL, free_port, isolate_state
from symmtui.errors import UserError
from symmtui.launch.profile import Profile, load_profile

NODES = ("node0", "node1")
TP = 16
HANG_RANK = 13  # on node 1 (ranks TP8-TP15)


def hang_rank(tp: int) -> int:
    """The rank that hangs: TP13 of TP16 (the sixth of node 1's eight); the last rank for a smaller TP."""
    return HANG_RANK if tp == TP else tp - 1


def write_nodes_profile(root: Path, *, speed: float, port: int | None = None, stall: float | None = None,
                        timeout: float = 600.0, gpus: tuple[str, ...] = (), tp: int = TP) -> Path:
    """Write ``root/symmtui.toml`` for the 2-node story and return it (logs under ``root/logs/<node>``).

    ``gpus``: each node's exporter URL (the demo's simulated dcgm-exporters); none: no ``gpus`` key."""
    port = port if port is not None else free_port()
    init = free_port()
    server = [sys.executable, "-m", "symmtui.demo.server", "--speed", f"{BASE_SPEED * speed:g}", "--port", str(port),
              "--tp", str(tp), "--nnodes", str(len(NODES)), "--dist-init-addr", f"127.0.0.1:{init}",
              "--hang-rank", str(hang_rank(tp))]
    stall_s = stall if stall is not None else max(2.0, HANG_STALL / speed)
    lines = [
        "# symmtui 2-node demo profile (written by the demo; lives in a temp dir)",
        "[server]",
        f'url = "http://127.0.0.1:{port}/health"',
        f"log_dir = {json.dumps(str(root / 'logs'))}",
        f"timeout = {timeout:g}",
        f"stall = {stall_s:g}",
        "grace = 2",
    ]
    for name in NODES:
        argv = [*server, "--node-rank", "{node_rank}", "--hang-once", str(root / f"hung-once-{name}"),
                "--status-file", str(status_file(root, name))]
        lines += ["", "[[nodes]]", f'name = "{name}"', "launch = " + json.dumps(shlex.join(argv))]
        if gpus:
            lines.append(f"gpus = {json.dumps(gpus[NODES.index(name)])}")
    path = root / "symmtui.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def status_file(root: Path, node: str) -> Path:
    """Where node ``node``'s simulated server writes its status (its exporter reads it)."""
    return root / f"status-{node}.json"


class NodesDemo(Struct):
    """The 2-node demo: its temp dir, its profile, the two nodes' simulated GPU exporters."""

    root: Path
    profile: Profile
    exporters: list[ExpositionServer]

    def close(self) -> None:
        """Stop the exporters and remove the temp dir (after the Session stopped both nodes' servers)."""
        for e in self.exporters:
            e.close()
        shutil.rmtree(self.root, ignore_errors=True)


def build_nodes_demo(speed: float, *, root: Path | None = None, isolate: bool = True,
                     stall: float | None = None, tp: int = TP) -> NodesDemo:
    """`symmtui demo --nodes 2`: temp dir, two simulated exporters, the profile (the Session launches it)."""
    if not speed > 0:
        raise UserError(f"--speed must be a positive number, got {speed!r} (1 = a load of about a minute)")
    root = Path(tempfile.mkdtemp(prefix="symmtui-demo-nodes-")) if root is None else root
    if isolate:
        isolate_state(root)
    per = tp // len(NODES)
    exporters = [ExpositionServer(name, status_file(root, name), gpus=per, first_index=i * per)
                 for i, name in enumerate(NODES)]
    demo = NodesDemo(root, Profile(None), exporters)
    try:
        demo.profile = load_profile(write_nodes_profile(root, speed=speed, stall=stall, tp=tp,
                                                        gpus=tuple(e.url for e in exporters)))
    except BaseException:
        demo.close()
        raise
    return demo
