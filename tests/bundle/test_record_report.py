"""Record, report and replay through the real command line: a launched stand-in server, a followed log, planted secrets."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import pytest

from symmtui.bundle import store
from symmtui.bundle.format import SUFFIX, read_bundle
from symmtui.bundle.replay import Recording, ReplaySession
from symmtui.cli import main
from symmtui.judge.readiness import State
from symmtui.session.messages import EngineBatch, GpuRound, SessionMessage
from symmtui.verbs.printer import EXIT_CRASHED
from tests.launch.helpers import free_port, run_cli, stop_at_end, write_profile

__all__ = ["stop_at_end"]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HF = "hf_" + "PlantedTokenNeverShown0123456789"
BEARER = "bearer-planted-5f3a9c7e1d"
API_KEY = "apikey-planted-8b2e4d6f0a"
SECRETS = (HF, BEARER, API_KEY)


def _crashing_profile(tmp: Path) -> Path:
    """A wrapper that prints a bearer header and the token, then execs the stand-in (KeyError: 12)."""
    port = free_port()
    script = (f"echo 'Authorization: Bearer {BEARER}'; echo \"HF_TOKEN=$HF_TOKEN\"; "
              f"exec {sys.executable} -m symmtui.demo.server --speed 400 --shards 3 --tp 2 --port {port} "
              "--crash keyerror")
    command = ["/bin/sh", "-c", script, "server", "--api-key", API_KEY]
    return write_profile(tmp, command=command, log_dir=tmp / "logs", url=f"http://127.0.0.1:{port}/health",
                         grace=2, timeout=60, env={"HF_TOKEN": HF, "NCCL_DEBUG": "INFO"})


def test_launch_records_a_bundle_and_the_report_hides_planted_secrets(tmp_path: Path) -> None:
    cfg = _crashing_profile(tmp_path)
    res = run_cli("launch", "--config", str(cfg), "--no-preflight")
    assert res.returncode == EXIT_CRASHED, res.stdout + res.stderr
    (path,) = store.store_dir().glob(f"*{SUFFIX}")
    assert f"symmtui: bundle: {path} " in res.stderr  # printed under the verdict
    log = Path(read_bundle(path).data["generations"][0]["log_path"])
    assert path.name.startswith(store.stem(log, "") + ".")  # named after the log
    assert log.is_file() and HF in log.read_text()  # the server did print it: the bundle must not
    assert path.stat().st_mode & 0o077 == 0
    raw = gzip.decompress(path.read_bytes()).decode()
    for secret in SECRETS:
        assert secret not in raw
    bundle = read_bundle(path)
    assert bundle.data["final"] is True
    final = bundle.final
    assert final is not None and final["state"] == "crashed"
    assert "KeyError: 12" in final["cause"]["headline"]
    assert final["cause"]["diagnosis"]["id"]  # the catalogue's entry, as scan --json gives it
    texts = [r[4] for r in bundle.lines]
    assert "Authorization: [REDACTED]" in texts and "HF_TOKEN=[REDACTED]" in texts
    env = bundle.environment
    assert env is not None and dict(env.env) == {"HF_TOKEN": "(set)", "NCCL_DEBUG": "INFO"}
    assert env.argv is not None and env.argv[-2:] == ("--api-key", "[REDACTED]")

    rep = run_cli("report", "--config", str(cfg), "--tail", "20")
    assert rep.returncode == 0, rep.stderr
    md = rep.stdout
    whole = run_cli("report", "--config", str(cfg), "--tail", "5000").stdout
    auth = [line for line in whole.splitlines() if "Authorization: [REDACTED]" in line and not line.startswith("|")]
    assert auth and all("HF_TOKEN" not in line for line in auth), auth  # the redacted header kept its line break
    assert any("HF_TOKEN=[REDACTED]" in line for line in whole.splitlines())
    for secret in SECRETS:
        assert secret not in md
    assert md.startswith("## symmtui report: CRASHED: `KeyError: 12")
    for section in ("### Root cause", "### Diagnosis and fix", "### Timings", "### Environment",
                    "<details><summary>Log tail"):
        assert section in md
    assert ">> " in md.split("### Root cause")[1]  # the excerpt marks the cause's line
    assert "| HF_TOKEN | `(set)` |" in md and "| NCCL_DEBUG | `INFO` |" in md
    assert md.rstrip().endswith("</sub>") and "</details>" in md
    run_cli("stop", "--config", str(cfg))
    _replays_every_line(path)


def _replays_every_line(path: Path) -> None:
    """The bundle played back through the Session's message contract, as any front end reads it (the
    dashboard over the same ReplaySession: tests/bundle/test_replay.py)."""
    bundle = read_bundle(path)
    recording = Recording(bundle)
    session = ReplaySession(recording, speed=max(1.0, recording.duration / 0.3))
    messages: list[SessionMessage] = []
    session.observe(messages.append)  # every message as posted (the mailbox merges what waits in it)
    session.attach(lambda: None)
    try:
        assert session.ended.wait(30)
    finally:
        session.close()
    batches = [m for m in messages if isinstance(m, EngineBatch)]
    assert [ln.text for b in batches for ln in b.lines] == [r[4] for r in bundle.lines]
    assert batches[-1].snapshot.state is State.CRASHED
    gpus = [m for m in messages if isinstance(m, GpuRound)]
    assert gpus and gpus[0].snapshot.unavailable_reason is not None  # launched without NVML: said, not "reading"


def test_wait_records_in_the_state_dir_unless_told_not_to(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    shutil.copy(FIXTURES / "sglang-tp8-symm-mem-keyerror.log", log)
    off = run_cli("wait", "--log", str(log), "--timeout", "5", "--no-record")
    assert off.returncode == EXIT_CRASHED, off.stderr
    assert not list(tmp_path.glob(f"*{SUFFIX}")) and store.newest() is None and "bundle:" not in off.stderr
    on = run_cli("wait", "--log", str(log), "--timeout", "5")
    assert on.returncode == EXIT_CRASHED, on.stderr
    assert not list(tmp_path.glob(f"*{SUFFIX}"))  # nothing beside the log
    path = store.newest(stems={store.stem(log, "")})
    assert path is not None and on.stderr.rstrip().endswith(f"symmtui: bundle: {path} (symmtui report, symmtui replay)")
    bundle = read_bundle(path)
    assert bundle.final is not None and bundle.final["state"] == "crashed"
    assert bundle.data["log"]["lines_seen"] == len(log.read_text().splitlines())
    assert bundle.environment is not None and bundle.environment.argv is None  # an attach: no command known


@pytest.mark.parametrize("content", [b"", b"not gzip", gzip.compress(b'{"format": "other"}', mtime=0),
                                     gzip.compress(json.dumps({"format": "symmtui-bundle", "version": 99}).encode(),
                                                   mtime=0)],
                         ids=["empty", "not-gzip", "other-format", "future-version"])
def test_report_refuses_what_is_not_a_bundle(tmp_path: Path, content: bytes,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / f"x{SUFFIX}"
    bad.write_bytes(content)
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symmtui: error: ") and err.count("\n") == 1, err
