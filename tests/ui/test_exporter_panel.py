"""The dashboard's GPU panel on GPUs read from exporters (the kept real expositions): values, n/a, unreachable."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from symmtui.gpu.exporter import gpus_from_series, parse_exposition
from symmtui.gpu.sampler import GpuSnapshot
from symmtui.ui.app import SymmApp
from tests.ui.kit import READY_LOG, FixedSession, read_lines, replay, settle, text

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "exporters"


def _snapshot() -> GpuSnapshot:
    series = parse_exposition((FIX / "nvitop-exporter-h200.prom").read_text())
    series += parse_exposition((FIX / "dcgm-exporter-l40s.prom").read_text())
    scrape = gpus_from_series(series, fallback_host="unused", now=1000.0)
    return GpuSnapshot(1000.0, scrape.infos, scrape.samples, 0.004)


async def test_exporter_gpus_in_the_panel_and_an_unreachable_node() -> None:
    lines = read_lines(READY_LOG, upto=40)
    events, snap = replay(lines)
    gpus = _snapshot()
    session = FixedSession(lines, events, snap, gpus, None, our_pids=frozenset())
    app = SymmApp(session)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = text(app)
        h200 = next(ln for ln in screen.splitlines() if "H200" in ln)
        l40s = next(ln for ln in screen.splitlines() if "L40S" in ln)
        # processes and capability unknown (an exporter publishes neither): a dash, not 0, "n/a" or "n/ap"
        assert "100%" in h200 and "54°C" in h200 and "54°C  –  " in h200 and "n/ap" not in h200
        assert "32°C" in l40s and " – " in l40s and "n/a" not in l40s
    lost = replace(gpus, samples=(replace(gpus.samples[0], lost=True),) + gpus.samples[1:])
    session = FixedSession(lines, events, snap, lost, None, our_pids=frozenset())
    app = SymmApp(session)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert "gpu-node-1: exporter unreachable" in text(app)
        assert "GPU LOST" not in text(app)
