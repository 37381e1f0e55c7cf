"""HTTP probe faults against a real server on 127.0.0.1: 200, refused, 500s, hang, reset, bad DNS, 200 before the marker."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from symmtui.bringup.engine import Bringup, EngineUpdate
from symmtui.bringup.probe import HttpProbe, ProbeResult, check_url
from symmtui.errors import UserError
from symmtui.judge.readiness import READY_WAITING_HEALTH, ReadinessConfig, State
from tests.core.engine_kit import Health, Writer, free_port, http_server, wait_until


def test_200_is_up() -> None:
    with http_server(Health(200)) as url:
        res = HttpProbe(url).check()
    assert res.ok and res.kind == "up" and res.status == 200 and "answered 200" in res.detail


def test_refused_means_still_starting() -> None:
    res = HttpProbe(f"http://127.0.0.1:{free_port()}/health").check()
    assert not res.ok and res.kind == "refused" and "still starting" in res.detail


def test_500_is_not_up_and_says_so() -> None:
    with http_server(Health(500)) as url:
        res = HttpProbe(url).check()
    assert not res.ok and res.kind == "http" and res.status == 500 and "answered 500" in res.detail


def test_hang_times_out_without_freezing() -> None:
    h = Health()
    h.mode = "hang"
    with http_server(h) as url:
        t0 = time.monotonic()
        res = HttpProbe(url, timeout=0.3).check()
        took = time.monotonic() - t0
    assert not res.ok and res.kind == "timeout" and "hangs" in res.detail
    assert took < 10  # bounded by the request timeout, not by the server


def test_reset_is_reported() -> None:
    h = Health()
    h.mode = "reset"
    with http_server(h) as url:
        res = HttpProbe(url).check()
    assert not res.ok and res.kind == "reset"


def test_unresolvable_name_is_a_dns_detail() -> None:
    res = HttpProbe("http://no-such-host.invalid:30000/health", timeout=2.0).check()
    assert not res.ok and res.kind == "dns" and "no-such-host.invalid" in res.detail


@pytest.mark.parametrize("url", ["localhost:30000/health", "ftp://x/health", "http:///health", "http://h:99999/x"])
def test_bad_url_is_a_user_error(url: str) -> None:
    with pytest.raises(UserError, match="bad --url"):
        check_url(url)


def test_backoff_does_not_hammer() -> None:
    h = Health(503)
    stop = threading.Event()
    results: list[ProbeResult] = []
    with http_server(h) as url:
        probe = HttpProbe(url, min_interval=0.05, max_interval=0.2)
        t = threading.Thread(target=probe.run, args=(stop, results.append))
        t.start()
        assert wait_until(lambda: len(results) >= 5, timeout=30)
        t0 = time.monotonic()
        n0 = h.requests
        time.sleep(0.6)
        rate = (h.requests - n0) / (time.monotonic() - t0)
        stop.set()
        t.join(10)
    assert not t.is_alive()
    # at the 0.2 s ceiling: about 5 requests a second (not the 20 of the 0.05 s floor), never a tight loop
    assert rate <= 8.0
    assert all(r.status == 503 for r in results)


def test_kick_probes_at_once() -> None:
    h = Health(503)
    stop = threading.Event()
    results: list[ProbeResult] = []
    with http_server(h) as url:
        probe = HttpProbe(url, min_interval=30, max_interval=30)
        t = threading.Thread(target=probe.run, args=(stop, results.append))
        t.start()
        assert wait_until(lambda: len(results) >= 1)
        probe.kick()
        assert wait_until(lambda: len(results) >= 2, timeout=10)
        stop.set()
        t.join(10)


def _engine(log: Path | None, url: str, **kw: object) -> tuple[Bringup, list[EngineUpdate]]:
    ups: list[EngineUpdate] = []
    b = Bringup(log, url=url, config=ReadinessConfig(timeout=60), on_update=ups.append,
                probe_interval=(0.05, 0.2), probe_timeout=0.5, **kw)  # type: ignore[arg-type]
    b.start()
    return b, ups


def test_200_before_the_log_marker_is_ready(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with http_server(Health(200)) as url, Writer(log) as w:
        w.write("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n")
        b, _ = _engine(log, url)
        try:
            snap = b.wait_final(30)
        finally:
            b.stop()
    assert snap.state is State.READY and not snap.marker_seen and "200" in snap.detail


def test_marker_with_500_waits_for_health_then_ready(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    h = Health(500)
    with http_server(h) as url, Writer(log) as w:
        b, _ = _engine(log, url)
        try:
            w.write("[2026-11-29 09:48:04] The server is fired up and ready to roll!\n")
            assert wait_until(lambda: b.snapshot().phase == READY_WAITING_HEALTH)
            assert b.snapshot().state is State.STARTING
            with h.lock:
                h.status = 200
            snap = b.wait_final(30)
        finally:
            b.stop()
    assert snap.state is State.READY and snap.marker_seen


def test_hanging_probe_does_not_block_the_log_verdict(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    h = Health()
    h.mode = "hang"
    with http_server(h) as url, Writer(log) as w:
        b, _ = _engine(log, url)
        try:
            w.write("[2026-11-29 09:40:17 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                    '  File "/x/torch_symm_mem.py", line 83, in __init__\n    x\nKeyError: 12\n')
            snap = b.wait_final(30)
            assert snap.probe_detail is None or "hangs" in snap.probe_detail
        finally:
            t0 = time.monotonic()
            b.stop()
            stop_took = time.monotonic() - t0
    assert snap.state is State.CRASHED
    assert stop_took < 15
    assert not [t for t in threading.enumerate() if t.name.startswith("symmtui-")]
