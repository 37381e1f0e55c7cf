"""Phase timings against earlier runs: two real launches of the stand-in server, the second slower in one
phase (its --delays file, outside the command's hash); the READY block compares from the second ready
launch, `symmtui history` prints both, and versions that changed are named under a slower phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symmtui import __version__
from symmtui.cli import main
from symmtui.launch.history import History, HistoryEntry
from symmtui.launch.timings import compare
from symmtui.session.intents import Launch
from tests.launch.helpers import demo_config, run_cli, stop_at_end

__all__ = ["stop_at_end"]


def test_the_second_ready_launch_names_its_slower_phase_and_history_prints_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    delays = tmp_path / "delays.json"  # the log's clock jumps 2 s after the weights (nothing waits)
    delays.write_text(json.dumps({"weights": 2}))
    cfg = demo_config(tmp_path, "--delays", str(delays), speed=800.0, shards=3)
    first = run_cli("launch", "--config", str(cfg))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "READY after" in first.stdout and "timings:" not in first.stdout  # nothing to compare with yet

    delays.write_text(json.dumps({"weights": 6}))
    second = run_cli("launch", "--config", str(cfg))
    assert second.returncode == 0, second.stdout + second.stderr
    slower = [ln.strip() for ln in second.stdout.splitlines() if ln.strip().startswith("timings: loading weights")]
    assert len(slower) == 1, second.stdout
    assert "(usual " in slower[0] and "x slower)" in slower[0]

    # `wait` on the profile follows its latest log, not a launch: the same comparison, that launch's own
    # history line left out
    capsys.readouterr()
    assert main(["wait", "--config", str(cfg), "--no-record", "--no-stacks"]) == 0
    waited = capsys.readouterr().out
    assert [ln.strip() for ln in waited.splitlines() if ln.strip().startswith("timings:")] == slower, waited

    entries = History().entries()
    assert [e.verdict for e in entries] == ["ready", "ready"]
    assert entries[1].phases["loading weights"] >= entries[0].phases["loading weights"] + 3
    assert all(e.versions.get("symmtui") == __version__ for e in entries)  # the rest is read 1 s after start

    assert main(["history", "--config", str(cfg)]) == 0  # in this process: the verb reads the same history
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:6] == ["#", "id", "started", "verdict", "total", "launch"]
    rows = [ln for ln in lines[1:] if ln[:1].isdigit()]
    assert len(rows) == 2 and all("  ready  " in r and "symmtui " in r for r in rows)
    assert any(ln.strip().startswith("timings: loading weights") for ln in lines)

    assert main(["history", "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert [x["launch_id"] for x in as_json["launches"]] == [e.launch_id for e in entries]
    assert as_json["launches"][1]["phases"]["loading weights"] == entries[1].phases["loading weights"]


def _entry(n: int, weights: float, versions: dict[str, str], verdict: str = "ready") -> HistoryEntry:
    return HistoryEntry(launch_id=f"L{n}", command_hash="c", start=1000.0 * n, end=1000.0 * n + 100 + weights,
                        verdict=verdict, phases={"init distributed": 10.0, "loading weights": weights,
                                                 "capturing CUDA graphs": 40.0}, versions=versions)


def test_the_usual_is_the_median_of_the_last_ready_launches_and_an_upgrade_is_named() -> None:
    old = {"symmtui": "0.1.0", "sglang": "0.5.3", "torch": "2.8.0"}
    new = {**old, "sglang": "0.5.4"}
    earlier = [_entry(1, 400, old), _entry(2, 95, old), _entry(3, 90, old), _entry(4, 0, old, "crashed"),
               _entry(5, 100, old), _entry(6, 95, old), _entry(7, 99, old)]
    now = _entry(8, 212, new)
    found = compare(now, [*earlier, now])
    assert found is not None and found.samples == 5  # the last five ready ones: 400 s is out of the window
    assert found.lines() == [
        "timings: loading weights 212 s (usual 95 s, 2.2x slower)",
        "timings: slower since an upgrade: sglang 0.5.3 -> 0.5.4 (the 5 launches compared ran the old versions)",
    ]
    # within the rule (1.5x and 5 s or 5% of the usual load): nothing to say
    assert compare(_entry(9, 120, old), [*earlier, _entry(9, 120, old)]).lines() == []  # type: ignore[union-attr]
    # the first ready launch has nothing to compare with
    assert compare(earlier[0], earlier[:1]) is None


def test_history_prints_log_text_sanitised(capsys: pytest.CaptureFixture[str]) -> None:
    History().append(HistoryEntry(launch_id="L1", command_hash="c", start=1000.0, end=1014.0, verdict="crashed",
                                  cause="KeyError: 12 \x1b]0;owned\x07 at x.py:1", phases={"init distributed": 3.0},
                                  versions={"sglang": "0.5.3\x1b[2J"}))
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "KeyError: 12 \\x1b]0;owned\\x07 at x.py:1" in out and "sglang 0.5.3\\x1b[2J" in out
    assert "crashed" in out and "14 s" in out


def _fake_sglang(site: Path, version: str) -> None:
    """A site dir holding an 'sglang' package at ``version`` (its dist-info is what a version is read from)."""
    for old in site.glob("sglang-*.dist-info"):
        (old / "METADATA").unlink()
        old.rmdir()
    (site / "sglang").mkdir(parents=True, exist_ok=True)
    (site / "sglang" / "__init__.py").write_text("")
    info = site / f"sglang-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")


def test_versions_are_read_from_the_servers_interpreter_and_an_upgrade_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import time

    from symmtui.launch import versions
    from symmtui.launch.profile import parse_profile

    monkeypatch.setattr(versions, "DELAY", 0.0)
    site = tmp_path / "site"
    text = (f'[server]\ncommand = [{json.dumps(sys.executable)}, "-m", "sglang.launch_server"]\n'
            f'log_dir = "{tmp_path / "logs"}"\n[server.env]\nPYTHONPATH = "{site}"\n')
    profile = parse_profile(text, tmp_path / "symmtui.toml")
    probe = versions.VersionProbe()
    read: list[dict[str, str]] = []
    for n, version in enumerate(("0.5.3", "0.5.4")):
        _fake_sglang(site, version)
        probe.start(f"L{n}", profile)  # a real child interpreter with the profile's environment
        deadline = time.monotonic() + 20
        while "sglang" not in probe.get(f"L{n}") and time.monotonic() < deadline:
            time.sleep(0.02)
        read.append(dict(probe.get(f"L{n}")))
    assert [r.get("sglang") for r in read] == ["0.5.3", "0.5.4"] and read[0]["symmtui"] == __version__
    before = _entry(1, 95, read[0])
    now = _entry(2, 212, read[1])
    assert compare(now, [before, now]).lines()[-1] == (  # type: ignore[union-attr]
        "timings: slower since an upgrade: sglang 0.5.3 -> 0.5.4 (the 1 launch compared ran the old versions)")


def test_one_launch_probes_the_servers_interpreter_once_for_its_bundle_and_its_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from symmtui.build import Limits, launch_spec
    from symmtui.bundle.format import SUFFIX
    from symmtui.bundle.wire import record
    from symmtui.launch import versions
    from symmtui.launch.profile import load_profile
    from symmtui.patch import finder
    from symmtui.session.core import Session
    from symmtui.session.spec import Record
    from tests.launch.helpers import wait_until

    monkeypatch.setattr(versions, "DELAY", 0.0)
    site = tmp_path / "site"
    _fake_sglang(site, "0.5.3")
    profile = load_profile(demo_config(tmp_path, name="once.toml", env={"PYTHONPATH": str(site)}))  # stopped here
    asked: list[str | None] = []
    locate = finder.locate

    def counted(*args: object, **kwargs: object) -> object:
        asked.append(str(kwargs.get("python")))  # each call is one child interpreter asked for its packages
        return locate(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(finder, "locate", counted)
    session = Session(launch_spec(profile, limits=Limits(), grace=None, notify=False, record_bundle=False))
    [rec] = record(session, Record(tmp_path / f"b{SUFFIX}"))
    supervisor = session.head.supervisor
    assert supervisor is not None
    try:
        [(_node, launched)] = session.ask(Launch(checked=False)).records  # the real stand-in server, as `symmtui launch` starts it
        versions_of_launch = supervisor.versions
        wait_until(lambda: "sglang" in versions_of_launch.get(launched.launch_id), 20, "the launch's versions")
        assert rec.env_done.wait(20) and rec.environment is not None
    finally:
        session.close()
        supervisor.stop(grace=1)
    assert rec.environment.version("sglang") == "0.5.3"  # the bundle's environment...
    assert versions_of_launch.get(launched.launch_id)["sglang"] == "0.5.3"  # ...and the history's versions
    assert asked == [profile.argv[0]]  # from one probe of the server's interpreter, not one each


def test_a_capture_asked_for_after_a_launch_is_not_the_next_launchs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo records after its first launch: that capture is older than the relaunch, which reads its own."""
    import time

    from symmtui.launch import versions
    from symmtui.launch.envinfo import EnvInfo, ServerCommand
    from symmtui.launch.profile import load_profile

    monkeypatch.setattr(versions, "DELAY", 0.0)
    site = tmp_path / "site"
    _fake_sglang(site, "0.5.4")
    profile = load_profile(demo_config(tmp_path, name="late.toml", env={"PYTHONPATH": str(site)}))
    command = ServerCommand.from_profile(profile)

    def recorded() -> EnvInfo:  # what the recorder's capture said (an older read of the same command)
        return EnvInfo(taken_at=0.0, symmtui=__version__, versions=(("sglang", "0.5.3"),))

    probe = versions.VersionProbe()
    early = probe.session_capture(recorded, command)
    assert probe.session_capture(recorded, command) is early  # asked twice before a launch: one capture
    probe.start("L1", profile)  # no process: the versions are read of the profile's command
    late = probe.session_capture(recorded, command)
    assert late is not early and late.get().version("sglang") == "0.5.3"
    probe.start("L2", profile)
    deadline = time.monotonic() + 20
    while not all("sglang" in probe.get(n) for n in ("L1", "L2")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert probe.get("L1")["sglang"] == "0.5.3"  # the first launch took the capture asked for before it
    assert probe.get("L2")["sglang"] == "0.5.4"  # the relaunch read its own, not the late one


def test_versions_not_read_past_symmtuis_own_are_no_removal() -> None:
    """A launch whose verdict came before its read keeps symmtui's version alone: nothing else is 'absent'."""
    from symmtui.launch.timings import upgrades

    read = {"symmtui": "1", "driver": "580.95.05", "cuda driver": "13.0"}
    assert upgrades(read, {"symmtui": "1"}) == ()
    assert upgrades({"symmtui": "1"}, {"symmtui": "2", "driver": "580.95.05"}) == (("symmtui", "1", "2"),)
    assert upgrades(read, {"symmtui": "1", "driver": "590.1"}) == (  # both read: a missing one is named
        ("driver", "580.95.05", "590.1"), ("cuda driver", "13.0", None))
