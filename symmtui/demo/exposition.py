"""A simulated node's GPU exporter for the demo: dcgm-exporter's exposition text on 127.0.0.1, its memory
following that node's simulated server (its status file), so the 2-node story reads its GPUs over HTTP.

The metric names and labels are dcgm-exporter's (the shape of the exposition kept in the tests' fixtures);
the values are the simulation's.
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

from symmtui.proc.pidwatch import process_exit_status

MODEL = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
TOTAL_MIB = 97887
SHARE = 0.88  # the simulated server's mem_fraction_static: how full "memory_fraction" 1.0 makes a GPU


class ExpositionServer:
    """Serves ``/metrics`` for ``gpus`` GPUs of node ``node`` until :meth:`close`."""

    def __init__(self, node: str, status: Path, *, gpus: int = 8, first_index: int = 0) -> None:
        self.node = node
        self.status = status
        self.gpus = gpus
        self.first_index = first_index
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = owner.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/metrics"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name=f"symmtui-demo-exporter-{node}",
                                        daemon=True)
        self._thread.start()

    def fraction(self) -> float:
        """How full each GPU is now: the server's memory fraction while it runs, else 0."""
        try:
            data = json.loads(self.status.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0.0
        pid = int(data.get("pid", 0))
        if pid <= 0 or not process_exit_status(pid)[0] or data.get("state") == "crashed":
            return 0.0
        return min(1.0, float(data.get("memory_fraction", 0.0)) / SHARE) * SHARE

    def text(self) -> str:
        used = int(TOTAL_MIB * self.fraction())
        util = 0 if used == 0 else 97
        out: list[str] = []
        for metric, value, help_text in (
            ("DCGM_FI_DEV_FB_USED", used, "Framebuffer memory used (in MiB)."),
            ("DCGM_FI_DEV_FB_FREE", TOTAL_MIB - used, "Framebuffer memory free (in MiB)."),
            ("DCGM_FI_DEV_GPU_UTIL", util, "GPU utilization (in %)."),
            ("DCGM_FI_DEV_GPU_TEMP", 34 + util // 3, "GPU temperature (in C)."),
            ("DCGM_FI_DEV_POWER_USAGE", 80 + 4 * util, "Power draw (in W)."),
        ):
            out += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
            for g in range(self.gpus):
                i = self.first_index + g
                labels = (f'gpu="{g}",UUID="GPU-{self.node}-{i:04d}",device="nvidia{g}",'
                          f'modelName="{MODEL}",Hostname="{self.node}"')
                out.append(f"{metric}{{{labels}}} {value}")
        return "\n".join(out) + "\n"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
