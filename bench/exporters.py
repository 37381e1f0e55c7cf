"""Reading GPUs from exporters: 16 GPUs from two exporters at 1 Hz, CPU of the reading process vs. idle.

`python -m bench.exporters` starts two exporter stand-ins as separate processes (their CPU is not
ours): real HTTP servers on 127.0.0.1 serving an 8-GPU nvitop-exporter page and an 8-GPU dcgm-exporter
page, built from the real expositions kept in tests/fixtures/exporters/ (each GPU's series repeated
with its own index and UUID). The reading process runs symmtui's sampler over both (`MultiSource`) at
1 Hz for 20 s and reports its own CPU time (every thread) against the same process idle for 10 s, and
one round's cost against fetching both pages without parsing. Target: < 2 % of one core.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from symmtui.gpu.exporter import ExporterSource, parse_exposition
from symmtui.gpu.multi import MultiSource
from symmtui.gpu.sampler import GpuSampler

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "exporters"
CPU_TARGET = 0.02
GPUS_PER_EXPORTER = 8

SERVER = r"""
import http.server, sys
body = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 17  # headers and body in one write (unbuffered, Nagle + delayed ACK add 40 ms)
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


def widen(text: str, gpus: int, index_label: str, uuid_label: str) -> str:
    """The exposition with every series of GPU 0 repeated for GPUs 0..gpus-1 (own index and UUID)."""
    out: list[str] = []
    pat = re.compile(rf'{index_label}="0"')
    for line in text.splitlines():
        if line.startswith("#") or not pat.search(line):
            out.append(line)
            continue
        for i in range(gpus):
            widened = pat.sub(f'{index_label}="{i}"', line)
            widened = re.sub(rf'({uuid_label}="GPU-[0-9a-f-]*?)([0-9a-f]{{2}})"', rf'\g<1>{i:02x}"', widened)
            out.append(widened)
    return "\n".join(out) + "\n"


def _start(page: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(page)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/metrics"


def _cpu_per_call(fn: Callable[[], object], rounds: int = 20) -> float:
    """Median CPU seconds of one call."""
    costs = []
    for _ in range(rounds):
        c0 = time.process_time()
        fn()
        costs.append(time.process_time() - c0)
    return statistics.median(costs)


def _cpu_over(seconds: float) -> float:
    """CPU seconds of this process (all threads) over ``seconds`` of wall time, divided by the wall time."""
    c0, w0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    return (time.process_time() - c0) / (time.perf_counter() - w0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 s windows instead of 20 s / 10 s")
    ap.add_argument("--seconds", type=float, default=20.0, help="the sampler's window (default 20)")
    args = ap.parse_args(argv)
    window = 5.0 if args.quick else args.seconds
    idle_window = 5.0 if args.quick else 10.0
    tmp = Path(subprocess.check_output(["mktemp", "-d"], text=True).strip())
    nvitop = tmp / "nvitop-8.prom"
    dcgm = tmp / "dcgm-8.prom"
    nvitop.write_text(widen((FIX / "nvitop-exporter-h200.prom").read_text(), GPUS_PER_EXPORTER, "index", "uuid"))
    dcgm.write_text(widen((FIX / "dcgm-exporter-l40s.prom").read_text(), GPUS_PER_EXPORTER, "gpu", "UUID"))
    servers = [_start(nvitop), _start(dcgm)]
    try:
        urls = [u for _, u in servers]
        sources = [ExporterSource(u, timeout=2.0) for u in urls]
        multi = MultiSource(list(sources))
        first = multi.read()
        gpus = len(first.infos)
        hosts = sorted({i.host or "" for i in first.infos})
        assert gpus == 2 * GPUS_PER_EXPORTER and first.unavailable_reason is None, (gpus, first.unavailable_reason)
        sizes = [len(nvitop.read_bytes()), len(dcgm.read_bytes())]
        lines = [len(nvitop.read_text().splitlines()), len(dcgm.read_text().splitlines())]
        # One round, warm: parse + map both pages (the sampler's work each second).
        rounds = [multi.read().stats for _ in range(30)]
        costs = sorted(r.seconds for r in rounds if r is not None)
        with httpx.Client(trust_env=False) as client:
            raw = []
            for _ in range(30):
                t0 = time.perf_counter()
                for u in urls:
                    client.get(u).read()
                raw.append(time.perf_counter() - t0)
        raw.sort()
        pages = [nvitop.read_text(), dcgm.read_text()]
        ours = _cpu_per_call(lambda: [parse_exposition(p) for p in pages])
        whole = _cpu_per_call(lambda: [list(text_string_to_metric_families(p)) for p in pages])
        idle = _cpu_over(idle_window)
        sampler = GpuSampler(multi, interval=1.0)
        sampler.start()
        try:
            busy = _cpu_over(window)
        finally:
            sampler.stop()
        rounds_run = sampler.latest().seq if sampler.latest() is not None else 0  # type: ignore[union-attr]
        multi.close()
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait()
    print(f"{gpus} GPUs on hosts {', '.join(hosts)} from 2 exporters: nvitop-exporter page {sizes[0]} bytes "
          f"({lines[0]} lines), dcgm-exporter page {sizes[1]} bytes ({lines[1]} lines)")
    print(f"{'what':<58}{'value':>14}  note")
    print(f"{'one round, both exporters (GET + parse + map), median':<58}{costs[len(costs) // 2] * 1000:>11.2f} ms"
          f"  p99 {costs[-1] * 1000:.2f} ms, 30 rounds")
    print(f"{'baseline: GET both pages, no parsing, median':<58}{raw[len(raw) // 2] * 1000:>11.2f} ms"
          f"  same connection reuse (httpx.Client)")
    print(f"{'parse both pages: the families symmtui reads, CPU':<58}{ours * 1000:>11.2f} ms  median of 20")
    print(f"{'baseline: prometheus_client parser over whole pages, CPU':<58}{whole * 1000:>11.2f} ms  median of 20")
    print(f"{'reading process CPU, sampler at 1 Hz':<58}{busy * 100:>12.3f} %  "
          f"{window:g} s, {rounds_run} rounds; target < {CPU_TARGET * 100:g} % of one core")
    print(f"{'baseline: the same process idle':<58}{idle * 100:>12.3f} %  {idle_window:g} s")
    ok = busy < CPU_TARGET
    print("target met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
