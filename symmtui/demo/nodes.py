"""The 2-node story's profile: a TP16 simulated server over two "nodes" (two local server processes,
``--nnodes 2 --node-rank N``); node 1's rank TP13 hangs in NCCL init on the first launch, the relaunch comes up.

Everything real but the second machine: each node's ``launch`` is the simulated server run here (a real
profile would say ``ssh NODE python -m sglang.launch_server ...``), its output is the node's log.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from symmtui.demo.story import BASE_SPEED, HANG_STALL, free_port

NODES = ("node0", "node1")
TP = 16
HANG_RANK = 13  # on node 1 (ranks TP8-TP15)


def write_nodes_profile(root: Path, *, speed: float, port: int | None = None, stall: float | None = None,
                        timeout: float = 600.0) -> Path:
    """Write ``root/symmtui.toml`` for the 2-node story and return it (logs under ``root/logs/<node>``)."""
    port = port if port is not None else free_port()
    init = free_port()
    server = [sys.executable, "-m", "symmtui.demo.server", "--speed", f"{BASE_SPEED * speed:g}", "--port", str(port),
              "--tp", str(TP), "--nnodes", str(len(NODES)), "--dist-init-addr", f"127.0.0.1:{init}",
              "--hang-rank", str(HANG_RANK)]
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
                "--status-file", str(root / f"status-{name}.json")]
        lines += ["", "[[nodes]]", f'name = "{name}"', "launch = " + json.dumps(shlex.join(argv))]
    path = root / "symmtui.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
