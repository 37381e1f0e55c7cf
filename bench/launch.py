"""Launcher costs: finding a launch's processes (vs the psutil-object baseline) and stop latency."""

# `python -m bench.launch` prints two tables. Targets: ``collect`` < 50 ms with 200 unrelated processes
# started after the launch (the dashboard calls it once per GPU sample); a stop of a cooperative server
# < 0.5 s; a stop that must escalate < grace + 0.5 s. Exit 1 if a target is missed.

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

COLLECT_TARGET_S = 0.050
STOP_TARGET_S = 0.5


def _baseline(pid: int, when: float, sid: int, launch_id: str) -> set[int]:
    """The obvious psutil version: children(recursive) + a process_iter scan reading every environ."""
    out = {pid}
    out.update(p.pid for p in psutil.Process(pid).children(recursive=True))
    for p in psutil.process_iter(["create_time"]):
        try:
            if p.info["create_time"] < when:
                continue
            if os.getsid(p.pid) == sid or p.environ().get("SYMMTUI_LAUNCH_ID") == launch_id:
                out.add(p.pid)
        except (psutil.Error, OSError):
            continue
    return out


def bench_collect() -> bool:
    from symmtui.proc import proctree

    env = {**os.environ, proctree.MARKER_ENV: "bench"}
    leader = subprocess.Popen(["sleep", "120"], start_new_session=True, env=env)
    ct = psutil.Process(leader.pid).create_time()
    extra: list[subprocess.Popen[bytes]] = []
    ok = True
    print(f"{'unrelated processes after launch':>34} | {'host procs':>10} | {'collect ms':>10} | {'baseline ms':>11}")
    try:
        for n in (0, 200, 1000):
            extra += [subprocess.Popen(["sleep", "120"]) for _ in range(n - len(extra))]
            ours, base = [], []
            for _ in range(15):
                t = time.perf_counter()
                found = proctree.collect(leader.pid, ct, leader.pid, leader.pid, "bench")
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                _baseline(leader.pid, ct, leader.pid, "bench")
                base.append(time.perf_counter() - t)
            assert [p.pid for p in found] == [leader.pid]
            med = statistics.median(ours)
            print(f"{n:>34} | {len(psutil.pids()):>10} | {med * 1000:>10.1f} | {statistics.median(base) * 1000:>11.1f}")
            if n == 200 and med > COLLECT_TARGET_S:
                ok = False
    finally:
        for p in [leader, *extra]:
            p.kill()
            p.wait()
    print(f"target: collect < {COLLECT_TARGET_S * 1000:.0f} ms at 200: {'met' if ok else 'MISSED'}")
    return ok


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_stop(tmp: Path) -> bool:
    from symmtui.launch.profile import load_profile
    from symmtui.launch.supervisor import Supervisor

    ok = True
    print(f"\n{'case':<44} | {'launch ms':>9} | {'stop ms':>8} | procs | SIGKILLed | target")
    cases = [
        ("cooperative", (), 30.0),
        ("ignores SIGTERM (grace 0.5 s)", ("--ignore-sigterm",), 0.5),
        ("7 setsid workers", ("--grandchildren", "7"), 30.0),
        ("7 setsid workers ignoring SIGTERM (0.5 s)", ("--grandchildren", "7", "--ignore-sigterm"), 0.5),
    ]
    for name, extra, grace in cases:
        d = Path(tempfile.mkdtemp(prefix="case-", dir=tmp))
        port = _port()
        argv = [sys.executable, "-m", "symmtui.demo.server", "--speed", "1", "--port", str(port), "--listen-early",
                *extra]
        cmd = ", ".join(f'"{a}"' for a in argv)
        (d / "symmtui.toml").write_text(
            f'[server]\ncommand = [{cmd}]\nlog_dir = "logs"\nurl = "http://127.0.0.1:{port}/health"\n')
        sup = Supervisor(load_profile(d / "symmtui.toml"), grace=grace)
        t = time.perf_counter()
        rec = sup.launch()
        t_launch = time.perf_counter() - t
        deadline = time.monotonic() + 30
        while "server_args" not in Path(rec.log_path).read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        t = time.perf_counter()
        report = sup.stop()
        t_stop = time.perf_counter() - t
        limit = STOP_TARGET_S + (grace if report.killed else 0.0)
        met = t_stop < limit and report.clean
        ok = ok and met
        print(f"{name:<44} | {t_launch * 1000:>9.1f} | {t_stop * 1000:>8.1f} | {len(report.found):>5} | "
              f"{len(report.killed):>9} | < {limit * 1000:.0f} ms {'met' if met else 'MISSED'}")
    return ok


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        os.environ["XDG_STATE_HOME"] = tmp  # state, history and (per case) profiles and logs: removed after
        ok = bench_collect()
        ok = bench_stop(Path(tmp)) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
