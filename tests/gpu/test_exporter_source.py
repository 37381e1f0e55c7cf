"""`symmtui gpus --source`: real dcgm-exporter and nvitop-exporter expositions served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import csv
import http.server
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.gpu.exporter import ExporterSource, parse_exposition, prometheus_query
from symmtui.gpu.multi import MultiSource
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler
from symmtui.gpu.source import NvmlSource
from symmtui.gpu.specs import open_source
from symmtui.gpu.standin import load_standin
from tests.httpkit import serving

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "exporters"
DCGM = (FIX / "dcgm-exporter-l40s.prom").read_text()
NVITOP = (FIX / "nvitop-exporter-h200.prom").read_text()
SMI = next(csv.reader((FIX / "nvitop-exporter-h200.nvidia-smi.csv").open()))
MIB = 1024 * 1024


def _prometheus_answer(exposition: str, instance: str) -> dict[str, object]:
    """What a Prometheus server that scraped ``exposition`` answers to symmtui's query (an instant vector)."""
    result = [{"metric": {"__name__": s.name, **s.labels, "instance": instance, "job": "gpu"},
               "value": [time.time(), repr(s.value)]} for s in parse_exposition(exposition)]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, str, str]] = {}
    toggles: dict[str, bool] = {}

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        path, _, query = self.path.partition("?")
        if path == "/slow":
            time.sleep(0.6)
        if path.endswith("/api/v1/query") and "query=" not in query:
            self.send_error(400)
            return
        if self.toggles.get(path) is False:
            self.send_error(503)
            return
        status, ctype, body = self.routes.get(path, (404, "text/plain", "not found"))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (the timeout case)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    _Handler.routes = {
        "/dcgm/metrics": (200, "text/plain; version=0.0.4", DCGM),
        "/nvitop/metrics": (200, "text/plain; version=0.0.4", NVITOP),
        "/html": (200, "text/html", "<!doctype html><html><body>Grafana</body></html>\n"),
        "/nogpu/metrics": (200, "text/plain", "# HELP up Scrape up.\n# TYPE up gauge\nup 1\n"),
        "/prom/api/v1/query": (200, "application/json", json.dumps(_prometheus_answer(DCGM, "10.0.0.7:9400"))),
        "/bad/api/v1/query": (200, "application/json", json.dumps(
            {"status": "error", "errorType": "bad_data", "error": "parse error"})),
        "/flaky/metrics": (200, "text/plain", NVITOP),
    }
    with serving(_Handler) as url:
        yield url


def _gpus(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["gpus", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_dcgm_exporter_values_and_what_it_does_not_publish(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _gpus(capsys, "--source", f"{server}/dcgm/metrics", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["driver_version"] == "595.58.03"
    assert doc["sources"] == [{"url": f"{server}/dcgm/metrics", "kind": "dcgm-exporter", "driver_version": "595.58.03",
                               "hosts": ["gpu1-wl8sg"], "error": None}]
    [g] = doc["gpus"]
    assert (g["host"], g["host_index"], g["name"], g["pci_bus_id"]) == ("gpu1-wl8sg", 0, "NVIDIA L40S", "00000000:00:07.0")
    assert g["uuid"] == "GPU-5b4e07f6-3a86-4340-039d-25f2a83cdc43"
    mem = g["memory"]
    assert (mem["used_mib"], mem["free_mib"], mem["reserved_mib"], mem["total_mib"]) == (0, 45459, 608, 45459 + 608)
    assert (g["utilization_gpu_pct"], g["utilization_memory_pct"], g["temperature_c"], g["power_w"]) == (0, 0, 32, 35.686)
    # Not in this exposition: n/a (null), never zero.
    assert g["last_xid"] is None and g["power_limit_w"] is None and g["processes"] is None and g["capability"] is None
    assert g["na"]["xid"] == g["na"]["power_limit"] == "not published by the exporter"


def test_nvitop_exporter_agrees_with_nvidia_smi_of_the_same_moment(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _gpus(capsys, "--source", f"{server}/nvitop/metrics", "--json")
    assert code == 0
    doc = json.loads(out)
    [g] = doc["gpus"]
    _index, uuid, total, reserved, used, free, util, temp, power = (c.strip() for c in SMI)
    assert g["uuid"] == uuid and g["host"] == "gpu-node-1" and doc["driver_version"] == "580.159.04"
    mem = g["memory"]
    assert (mem["total_mib"], mem["reserved_mib"], mem["used_mib"], mem["free_mib"]) == tuple(
        map(int, (total, reserved, used, free)))
    assert mem["used_bytes"] == 22763339776  # NVML's own bytes at that moment (v2: reservation not counted)
    assert g["utilization_gpu_pct"] == int(util) and g["temperature_c"] == int(temp)
    assert abs(g["power_w"] - float(power)) < 5 and g["power_limit_w"] == 700.0
    assert g["last_xid"] is None  # nvitop-exporter has no Xid metric


def test_two_exporters_grouped_by_host(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _gpus(capsys, "--source", f"{server}/nvitop/metrics", "--source", f"{server}/dcgm/metrics")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("GPUs 2 from 2 sources: ")
    assert f"{server}/dcgm/metrics (dcgm-exporter, driver 595.58.03)" in lines[0]
    rows = [ln for ln in lines if "L40S" in ln or "H200" in ln]
    assert rows[0].split()[:3] == ["gpu-node-1", "0", "H200"]  # hosts in name order, each GPU by its own number
    assert rows[1].split()[:3] == ["gpu1-wl8sg", "0", "L40S"]
    assert "21709 / 143771" in rows[0] and "0 / 46067" in rows[1]
    assert "Processes: n/a" in out


def test_prometheus_server_query_api(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _gpus(capsys, "--source", f"{server}/prom/api/v1/query", "--json")
    assert code == 0
    [g] = json.loads(out)["gpus"]
    assert g["host"] == "gpu1-wl8sg" and g["memory"]["free_mib"] == 45459 and g["temperature_c"] == 32
    assert "DCGM_FI_DEV_FB_USED" in prometheus_query() and "gpu_memory_used_MiB" in prometheus_query()


@pytest.mark.parametrize(("path", "code", "said"), [
    ("ftp://example.org/metrics", 2, "is not an http(s) URL"),
    ("/missing", 3, "answered HTTP 404"),
    ("/html", 3, "did not answer with a Prometheus exposition"),
    ("/nogpu/metrics", 3, "publishes no GPU metrics"),
    ("/bad/api/v1/query", 3, "Prometheus said bad_data"),
    ("/slow", 3, "no answer within 0.3 s"),
])
def test_bad_sources_are_one_error_line(server: str, capsys: pytest.CaptureFixture[str],
                                        path: str, code: int, said: str) -> None:
    url = path if "://" in path else server + path
    timeout = "0.3" if path == "/slow" else "5"  # only /slow is meant to time out, however busy the machine
    rc, out, err = _gpus(capsys, "--source", url, "--source-timeout", timeout)
    assert rc == code and out == ""
    assert err.count("\n") == 1 and err.startswith("symmtui: error: --source ") and said in err


def test_unreachable_port_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _gpus(capsys, "--source", "http://127.0.0.1:9/metrics")
    assert rc == 3 and "cannot connect (connection refused): is the exporter running there?" in err


def test_sampler_keeps_an_exporter_that_goes_away_as_unreachable_rows(server: str) -> None:
    source = ExporterSource(f"{server}/flaky/metrics", timeout=2)
    sampler = GpuSampler(source)
    try:
        first = sampler.sample_once()
        assert first.unavailable_reason is None and first.samples[0].memory_used == 22763339776
        _Handler.toggles["/flaky/metrics"] = False
        gone = sampler.sample_once()
        assert gone.infos[0].lost and gone.samples[0].lost and gone.samples[0].memory_used is not None
        assert source.last_error is not None and "HTTP 503" in str(source.last_error)
        _Handler.toggles["/flaky/metrics"] = True
        back = sampler.sample_once()
        assert not back.samples[0].lost and source.last_error is None
    finally:
        _Handler.toggles.clear()
        source.close()


def test_nvml_and_an_exporter_in_one_round(server: str) -> None:
    nvml = Nvml(load_standin("h200-x2-nvswitch"))
    multi = MultiSource([open_source(f"{server}/dcgm/metrics"), NvmlSource(nvml)])
    try:
        r = multi.read()
    finally:
        multi.close()
    assert r.unavailable_reason is None
    assert [(i.index, i.host, i.host_index) for i in r.infos] == [(0, None, 0), (1, None, 1), (2, "gpu1-wl8sg", 0)]
    assert [s.index for s in r.samples] == [0, 1, 2]
    assert r.samples[2].memory_free == 45459 * MIB and r.samples[0].processes == ()


def test_a_session_samples_an_exporter_like_nvml(server: str) -> None:
    import queue

    from symmtui.session.messages import GpuRound, SessionMessage, TopologyRead
    from symmtui.session.spec import GpuPlan
    from tests.ui.kit import watched

    got: queue.Queue[SessionMessage] = queue.Queue()
    session = watched(gpus=GpuPlan(sources=(f"{server}/nvitop/metrics",)), sample_gpus=True, sample_interval=0.05,
                      observe=got.put)
    try:
        first = got.get(timeout=10)
        msg = got.get(timeout=10)
    finally:
        session.close()
    assert isinstance(first, TopologyRead) and first.topology is None  # no topology read without NVML
    assert isinstance(msg, GpuRound)
    assert msg.snapshot.infos[0].host == "gpu-node-1" and msg.snapshot.samples[0].utilization_gpu == 100
    assert msg.capability is None and msg.our_pids == frozenset()


@pytest.mark.parametrize("text", [DCGM, NVITOP], ids=["dcgm", "nvitop"])
def test_only_our_families_are_parsed_and_none_is_lost(text: str) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from symmtui.gpu.exporter import WANTED

    whole = [(s.name, s.labels, s.value) for fam in text_string_to_metric_families(text) for s in fam.samples
             if s.name in WANTED]
    assert [(s.name, dict(s.labels), s.value) for s in parse_exposition(text)] == whole
    assert len(whole) >= 7


def test_watch_json_keeps_a_source_that_stops_answering(server: str, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from symmtui.cli import build_parser
    from symmtui.gpu.remote import sources_main

    args = build_parser().parse_args(["gpus", "--source", f"{server}/flaky/metrics", "--source",
                                      f"{server}/dcgm/metrics", "--watch", "--json", "--interval", "0.05"])
    args.max_frames = 3
    real_read = ExporterSource.read
    reads = {"n": 0}

    def read(self: ExporterSource) -> object:
        """The real read; the flaky exporter answers the first round (two reads) and then no more."""
        reads["n"] += 1
        _Handler.toggles["/flaky/metrics"] = reads["n"] <= 2
        return real_read(self)

    monkeypatch.setattr(ExporterSource, "read", read)
    try:
        assert sources_main(args) == 0
    finally:
        _Handler.toggles.clear()
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(docs) == 3
    last = docs[-1]
    flaky = next(s for s in last["sources"] if s["url"].endswith("/flaky/metrics"))
    assert "HTTP 503" in flaky["error"]
    by_host = {g["host"]: g for g in last["gpus"]}
    assert by_host["gpu-node-1"]["lost"] is True and by_host["gpu1-wl8sg"]["lost"] is False
