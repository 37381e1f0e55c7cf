"""GPUs from an exporter for one server: `server.gpus` in a profile and the dashboard's `--gpus SPEC`, read
from the kept real expositions served over real HTTP on 127.0.0.1; a bad value is one error line."""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui.cli import main
from symmtui.gpu.exporter import ExporterSource
from symmtui.gpu.multi import MultiSource
from symmtui.launch.profile import ProfileError, load_profile
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.gpu_panel import GpuTable
from tests.httpkit import serving
from tests.ui.kit import FIXTURES, READY_LOG, dashboard, text, wait_for

EXPORTERS = FIXTURES / "exporters"
PAGES = {"/nvitop/metrics": (EXPORTERS / "nvitop-exporter-h200.prom").read_bytes(),
         "/dcgm/metrics": (EXPORTERS / "dcgm-exporter-l40s.prom").read_bytes()}


class _Exposition(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        body = PAGES.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def exporter() -> Iterator[str]:
    with serving(_Exposition) as url:
        yield url


def _profile(tmp_path: Path, gpus: str) -> Path:
    cfg = tmp_path / "one.toml"
    cfg.write_text(f'[server]\nlog = "{READY_LOG}"\ngpus = {gpus}\n')
    return cfg


async def test_profile_server_gpus_feeds_the_dashboard_from_the_exporter(tmp_path: Path, exporter: str) -> None:
    cfg = _profile(tmp_path, f'"{exporter}/nvitop/metrics"')
    assert load_profile(cfg).gpus == (f"{exporter}/nvitop/metrics",)
    session = dashboard(str(cfg), None, None)
    try:
        assert isinstance(session.gpu_source, ExporterSource)  # opened by the Session from its spec's plan
        app = SymmApp(session)
        async with app.run_test(size=(140, 40)) as pilot:
            table = app.query_one(GpuTable)
            await wait_for(pilot, lambda: table.snapshot is not None and len(table.snapshot.infos) > 0,
                           "the exporter's GPUs", timeout=20)
            await wait_for(pilot, lambda: "H200" in text(app), "the H200 rows")
            h200 = next(ln for ln in text(app).splitlines() if "H200" in ln)
            assert "100%" in h200 and "54°C" in h200  # the exposition's utilisation and temperature
    finally:
        session.close()


def test_gpus_option_overrides_the_profile_and_takes_several(tmp_path: Path, exporter: str) -> None:
    cfg = _profile(tmp_path, '"nvml"')
    session = dashboard(str(cfg), None, None, gpus=(f"{exporter}/nvitop/metrics", f"{exporter}/dcgm/metrics"))
    try:
        assert isinstance(session.gpu_source, MultiSource)
        reading = session.gpu_source.read()
    finally:
        session.close()
    assert reading.unavailable_reason is None
    assert {i.host for i in reading.infos} == {"gpu-node-1", "gpu1-wl8sg"}  # grouped by the exporters' hosts
    nvml_only = dashboard(str(cfg), None, None, gpus=("nvml",))
    try:
        assert nvml_only.gpu_source is None and nvml_only.nvml is not None  # NVML alone: sampled as before
    finally:
        nvml_only.close()


@pytest.mark.parametrize("value", ['"ftp://gpu-a:9400/metrics"', '["nvml", "gpu-a"]', "[]", "9400"])
def test_a_bad_server_gpus_is_one_profile_error(tmp_path: Path, value: str) -> None:
    with pytest.raises(ProfileError) as err:
        load_profile(_profile(tmp_path, value))
    message = str(err.value)
    assert "\n" not in message and "server.gpus" in message and "one.toml:3" in message


def test_server_gpus_with_nodes_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "pair.toml"
    cfg.write_text(f'[server]\ngpus = "nvml"\n[[nodes]]\nname = "a"\nlog = "{READY_LOG}"\n')
    with pytest.raises(ProfileError, match=r"server\.gpus: with \[\[nodes\]\], each node names its own gpus"):
        load_profile(cfg)


def test_a_bad_gpus_option_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--log", str(READY_LOG), "--gpus", "nvml", "--gpus", "gpu-a:9400"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("symmtui: error: --gpus must be \"nvml\" or an exporter's http(s) URL")
    assert "'gpu-a:9400'" in err
    cfg = tmp_path / "pair.toml"
    cfg.write_text(f'[server]\n[[nodes]]\nname = "a"\nlog = "{READY_LOG}"\n')
    assert main(["--config", str(cfg), "--gpus", "http://127.0.0.1:9400/metrics"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lists [[nodes]]: each node names its own gpus there; drop --gpus" in err
