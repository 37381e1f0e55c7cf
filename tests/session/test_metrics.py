"""symmtui as a Prometheus exporter: scraped over real HTTP during a real `wait` on a real log."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from symmtui.build import Limits, watch_spec
from symmtui.cli import main
from symmtui.metrics import BringupMetrics, MetricsServer
from symmtui.session.core import Session
from symmtui.verbs.printer import Printer
from tests.core.engine_kit import KEYERROR_LOG, READY_LOG, ROOT, Writer, free_port

READY_TEXT = READY_LOG.read_text()
BEFORE_READY, _, _ = READY_TEXT.partition("[2026-11-29 09:48:04] The server is fired up and ready to roll!")


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 - a loopback URL we built
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class _Scrape:
    """A /metrics page parsed by prometheus_client: value(name, **labels)."""

    def __init__(self, text: str) -> None:
        self.samples = [s for fam in text_string_to_metric_families(text) for s in fam.samples]

    def value(self, name: str, **labels: str) -> float:
        [v] = [s.value for s in self.samples if s.name == name and s.labels == labels]
        return float(v)

    def names(self) -> set[str]:
        return {s.name for s in self.samples}


def _until(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_ready_flips_from_503_to_200_during_a_real_wait(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with Writer(log) as writer:
        writer.write(BEFORE_READY.split("[2026-11-29 09:47:58 TP0] Capture cuda graph end")[0])
        proc = subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--timeout", "60", "--no-record",
                                 "--metrics-port", str(port), "--metrics-linger", "60"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # the server answers from before the engine's first snapshot ("not started"): wait that out
            _until(lambda: _try(f"{base}/ready") is not None and _get(f"{base}/ready")[1] != "not started\n")
            status, body = _get(f"{base}/ready")
            assert status == 503 and body.strip() in ("waiting", "starting")
            _until(lambda: "starting" in _get(f"{base}/ready")[1])
            m = _Scrape(_get(f"{base}/metrics")[1])
            who = {"node": socket.gethostname(), "profile": "attach server.log"}
            assert m.value("symmtui_bringup_state", **who, symmtui_bringup_state="starting") == 1
            assert m.value("symmtui_bringup_state", **who, symmtui_bringup_state="ready") == 0
            assert m.value("symmtui_bringup_elapsed_seconds", **who) >= 0
            assert "symmtui_bringup_phase" in m.names()
            assert m.value("symmtui_bringup_ready_seconds_count", **who) == 0
            writer.write(READY_TEXT[len(BEFORE_READY.split("[2026-11-29 09:47:58 TP0] Capture cuda graph end")[0]):])
            _until(lambda: _get(f"{base}/ready")[0] == 200)
            assert _get(f"{base}/ready")[1].strip() == "ready"
            m = _Scrape(_get(f"{base}/metrics")[1])
            assert m.value("symmtui_bringup_state", **who, symmtui_bringup_state="ready") == 1
            assert m.value("symmtui_bringup_ready_seconds_count", **who) == 1
            out, err = _end_linger(proc, base)  # Ctrl-C ends the linger; the exit code is still the verdict's
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    assert "READY" in out
    assert _try(f"{base}/ready") is None  # the endpoint went with the process


def _end_linger(proc: subprocess.Popen[str], base: str) -> tuple[str, str]:
    """Ctrl-C once the wait says it lingers (a fixed short linger races the scrapes on a loaded machine)."""
    assert proc.stderr is not None
    said = ""
    while not said.endswith("Ctrl-C ends it\n"):
        line = proc.stderr.readline()  # blocks until a line, or EOF: the process ended without lingering
        assert line, said
        said += line
    assert said.splitlines()[-1].startswith(f"symmtui: serving the verdict on {base}/ready for 60 s"), said
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return out, said + err


def _try(url: str) -> int | None:
    try:
        return _get(url)[0]
    except OSError:
        return None


def test_a_crash_is_counted_by_its_catalogue_entry() -> None:
    session = Session(watch_spec(KEYERROR_LOG, limits=Limits(timeout=30)))
    node = session.nodes[0]
    metrics = BringupMetrics(profile="p", nodes=[node], ready_history=[95.0, 400.0])
    session.observe(metrics)
    session.start()
    try:
        with open(os.devnull, "w") as out:
            result = Printer(session, out).run()
    finally:
        session.close()  # the observer heard everything by then
    assert result.state.value == "crashed"
    server = MetricsServer(metrics, port=0)
    try:
        text = _get(f"{server.url}/metrics")[1]
        status, body = _get(f"{server.url}/ready")
    finally:
        server.close()
    assert (status, body.strip()) == (503, "crashed")
    m = _Scrape(text)
    crashes = {s.labels["entry"]: s.value for s in m.samples if s.name == "symmtui_bringup_crashes_total"}
    assert result.board.cause is not None and result.board.cause.entry == "sm120-symm-mem-keyerror"
    assert crashes == {"sm120-symm-mem-keyerror": 1.0}  # by its catalogue entry
    assert m.value("symmtui_bringup_ready_seconds_count", node=node, profile="p") == 2  # the history's, not this crash
    assert m.value("symmtui_bringup_ready_seconds_bucket", node=node, profile="p", le="120.0") == 1
    assert m.value("symmtui_bringup_elapsed_seconds", node=node, profile="p") == result.board.about.elapsed  # the figure `wait` printed


def test_port_in_use_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        rc = main(["wait", "--log", str(tmp_path / "x.log"), "--metrics-port", str(port), "--timeout", "5"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith(f"symmtui: error: --metrics-port {port}: the port is in use")
    assert "pick another port" in err


def test_a_nodes_profile_is_one_endpoint_ready_when_every_node_is(tmp_path: Path) -> None:
    log_a = tmp_path / "a.log"  # the head node (rank 0): the aggregate is READY when it is and none crashed
    cfg = tmp_path / "pair.toml"
    cfg.write_text(f'[server]\ntimeout = 60\n[[nodes]]\nname = "gpu-a"\nlog = "{log_a}"\n'
                   f'[[nodes]]\nname = "gpu-b"\nlog = "{READY_LOG}"\n')
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    head = BEFORE_READY.split("[2026-11-29 09:47:58 TP0] Capture cuda graph end")[0]
    with Writer(log_a) as writer:
        writer.write(head)
        proc = subprocess.Popen([sys.executable, "-m", "symmtui", "wait", "--config", str(cfg), "--no-record",
                                 "--metrics-port", str(port), "--metrics-linger", "60"],
                                env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            _until(lambda: (_try(f"{base}/ready") or 0) == 503
                   and _get(f"{base}/ready")[1].strip() == "starting (gpu-a starting, gpu-b ready)")
            m = _Scrape(_get(f"{base}/metrics")[1])
            assert m.value("symmtui_bringup_state", node="gpu-a", profile="pair", symmtui_bringup_state="starting") == 1
            assert m.value("symmtui_bringup_state", node="gpu-b", profile="pair", symmtui_bringup_state="ready") == 1
            writer.write(READY_TEXT[len(head):])
            _until(lambda: _get(f"{base}/ready")[0] == 200)
            assert _get(f"{base}/ready")[1].strip() == "ready (gpu-a ready, gpu-b ready)"
            out, err = _end_linger(proc, base)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
