"""One host, one answer: the dashboard's patch modal and `symmtui patch check` give the same caveats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.build import dashboard_spec, open_session
from symmtui.demo.sandbox import write_sandbox
from symmtui.session.spec import PatchTarget
from symmtui.ui.app import SymmApp
from symmtui.ui.screens.patch import PatchScreen
from tests.gpu.hosts import nvlink_pair_host, write_host
from tests.ui.kit import CRASH_LOG, settle, text, wait_for

ROOT = Path(__file__).resolve().parents[2]


def cli_check(site: Path, standin: str) -> dict[str, object]:
    """The real `symmtui patch check --json` in a child process, on the stand-in host ``standin``."""
    env = {**os.environ, "SYMMTUI_NVML_STANDIN": standin, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-m", "symmtui", "patch", "check", "--site", str(site), "--package", "sglang", "--json"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT, check=False,
    )
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    [result] = doc["results"]
    assert isinstance(result, dict)
    return result


async def dashboard_check(site: Path, log: Path) -> tuple[str, tuple[str, ...], str]:
    """The dashboard as `symmtui --log LOG` builds it, its patcher pointed at ``site``: press p, read the modal."""
    spec = dashboard_spec(None, str(log), None, record_bundle=False)
    assert spec.patch is not None
    session = open_session(replace(spec, patch=PatchTarget(site, "sglang")))
    app = SymmApp(session)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await settle(pilot)
            await pilot.press("p")
            modal = app.screen
            assert isinstance(modal, PatchScreen)
            await wait_for(pilot, lambda: modal.view is not None, "the patch check")
            assert modal.view is not None
            notes = ["note: " + " ".join(c.split()[:4]) for c in modal.view.report.caveats]
            # the view is set a frame before the modal paints it: wait for the paint, not a fixed turn count
            await wait_for(pilot, lambda: all(n in text(app) for n in notes), "the modal's caveat notes")
            return modal.view.capability, modal.view.report.caveats, text(app)
    finally:
        session.close()


@pytest.mark.parametrize("host", ["rtx-pro-6000-x8-pcie", "h200-x2-nvswitch", "nvlink-one-pair"])
async def test_dashboard_and_patch_check_give_the_same_caveats(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin = host if host != "nvlink-one-pair" else str(write_host(nvlink_pair_host(), tmp_path / "host.json"))
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", standin)
    site = write_sandbox(tmp_path / "site").site
    log = tmp_path / "server.log"
    log.write_bytes(CRASH_LOG.read_bytes())

    capability, caveats, screen = await dashboard_check(site, log)
    cli = cli_check(site, standin)

    assert capability == cli["capability"]
    assert list(caveats) == cli["caveats"]
    for caveat in caveats:
        assert "note: " + " ".join(caveat.split()[:4]) in screen  # the modal shows each one
    if host == "h200-x2-nvswitch":
        assert capability == "9.0" and caveats == ()  # Hopper: the tables already have it
    else:
        # PCIe only, or NVLink between one pair only: multicast needs every pair, so both warn
        assert capability == "12.0" and any("PCIe only" in c for c in caveats)
