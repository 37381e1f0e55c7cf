"""What changed since it last worked, with real `symmtui` child processes launching the demo's simulated server:
a crash names the flag its diagnosis names first, then the variable that changed, with the READY launch's
time, in `launch`'s output, `wait --config`, `history --diff` and `symmtui report` of its bundle; a
secret is "changed" and nowhere in what symmtui wrote; a reordered command is no change; the first launch
has nothing to compare with; STALLED and TIMED OUT say it too."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import subprocess
from pathlib import Path

from symmtui.launch.history import History
from tests.launch.helpers import demo_config, free_port, run_cli, stop_at_end

__all__ = ["stop_at_end"]

HF_OLD = "hf_" + "Qw3rTy7uIoP1aSdFgHjKlZx"  # the Hugging Face token shape symmtui.redact masks
HF_NEW = "hf_" + "Mn8bVc5xZlKjHgFdSaPoIuY"
SINCE = re.compile(r"since the last READY launch, (\d{4}-\d\d-\d\d \d\d:\d\d) \(\d+ (?:s|min) ago\)")


def _changed(out: str) -> tuple[str, list[str]]:
    """The ``changed:`` line of a verdict block and the lines under it."""
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  changed: "))
    items = []
    for ln in lines[at + 1:]:
        if not ln.startswith("    "):
            break
        items.append(ln.strip())
    return lines[at].removeprefix("  changed: "), items


def test_the_crash_names_the_flag_added_first_and_the_variable_since_the_ready_launch(tmp_path: Path) -> None:
    port = free_port()

    def profile(*args: str, level: str, token: str) -> Path:
        return demo_config(tmp_path, *args, port=port, speed=800.0, shards=3,
                           env={"NCCL_P2P_LEVEL": level, "HF_TOKEN": token})

    # the first launch of the profile crashes: nothing to compare with
    cfg = profile("--enable-torch-symm-mem", level="NVL", token=HF_OLD)
    first = run_cli("launch", "--config", str(cfg), "--no-record")
    assert first.returncode == 1 and "KeyError: 12" in first.stdout, first.stdout + first.stderr
    assert _changed(first.stdout) == ("no READY launch of this profile to compare with", [])

    profile(level="NVL", token=HF_OLD)
    ready = run_cli("launch", "--config", str(cfg), "--no-record")
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert "changed:" not in ready.stdout  # a READY launch says nothing

    # then --enable-torch-symm-mem added, NCCL_P2P_LEVEL set to SYS, the token rotated
    profile("--enable-torch-symm-mem", level="SYS", token=HF_NEW)
    bundle = tmp_path / "crash.symmtui-bundle.json.gz"
    crash = run_cli("launch", "--config", str(cfg), "--bundle", str(bundle))
    assert crash.returncode == 1, crash.stdout + crash.stderr
    since, items = _changed(crash.stdout)
    entries = History().entries()
    assert [e.verdict for e in entries] == ["crashed", "ready", "crashed"]
    when = SINCE.fullmatch(since)
    assert when is not None, since
    assert when.group(1) == dt.datetime.fromtimestamp(entries[1].start).strftime("%Y-%m-%d %H:%M")
    assert items[0] == "--enable-torch-symm-mem added"  # first: the diagnosis names it
    assert "NCCL_P2P_LEVEL NVL -> SYS" in items and "HF_TOKEN changed" in items
    assert len(items) == 3, items
    # the block sits after next:, before also:
    block = crash.stdout.splitlines()
    assert block.index("  changed: " + since) == 1 + next(i for i, ln in enumerate(block) if ln.startswith("  next:"))

    # the history keeps why: `history --diff` says the same, in the same order
    diff = run_cli("history", "--diff", "--config", str(cfg))
    assert diff.returncode == 0, diff.stderr
    head, *rest = diff.stdout.splitlines()
    again = SINCE.search(head)  # "N s ago" is counted from now: the READY launch's time is the same
    assert head.endswith(":") and "crashed): " in head and again is not None and again.group(1) == when.group(1)
    assert [ln.strip() for ln in rest] == items
    as_json = json.loads(run_cli("history", "--diff", "-1", "--json").stdout)
    assert as_json["then"]["launch_id"] == entries[1].launch_id
    assert [c["text"] for c in as_json["changes"]] == items and as_json["changes"][0]["named"] is True
    assert run_cli("history", "--diff", "1", "3").stdout.splitlines()[1:] == ["  HF_TOKEN changed",
                                                                               "  NCCL_P2P_LEVEL NVL -> SYS"]
    wrong = run_cli("history", "--diff", "zzzz9")
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1 and "no launch 'zzzz9'" in wrong.stderr

    # `wait --config` on the profile's (crashed) log: the same comparison, from that launch's history line
    waited = run_cli("wait", "--config", str(cfg), "--no-record", "--no-stacks")
    assert waited.returncode == 1 and _changed(waited.stdout)[1] == items, waited.stdout

    # the report of its bundle
    report = run_cli("report", str(bundle))
    assert report.returncode == 0, report.stderr
    text = report.stdout
    section = text[text.index("### Changed since it last worked"):text.index("### Timings")]
    assert f"{since[:1].upper()}{since[1:]} (launch 1, CRASHED):" in section
    assert [ln.removeprefix("- ").strip("`") for ln in section.splitlines() if ln.startswith("- ")] == items

    # the secret is "changed", and its value is nowhere symmtui wrote
    written = [crash.stdout, crash.stderr, diff.stdout, text, History().path.read_text(),
               gzip.decompress(bundle.read_bytes()).decode()]
    for token in (HF_OLD, HF_NEW, HF_OLD[3:], HF_NEW[3:]):
        assert not any(token in w for w in written)


def test_a_reordered_command_is_no_change(tmp_path: Path) -> None:
    port = free_port()
    cfg = demo_config(tmp_path, port=port, speed=800.0, shards=3)
    assert run_cli("launch", "--config", str(cfg), "--no-record").returncode == 0
    argv = json.loads(re.search(r"command = (\[.*\])", cfg.read_text()).group(1))  # type: ignore[union-attr]
    program, flags = argv[:3], argv[3:]
    pairs = [flags[i:i + 2] for i in range(0, len(flags), 2)]
    reordered = [w for a, b in reversed(pairs) for w in (f"{a}={b}",)]  # other order, --flag=value
    cfg.write_text(cfg.read_text().replace(json.dumps(argv), json.dumps([*program, "--crash", "keyerror", *reordered])))
    crash = run_cli("launch", "--config", str(cfg), "--no-record")
    assert crash.returncode == 1, crash.stdout + crash.stderr
    assert _changed(crash.stdout)[1] == ["--crash keyerror added"], crash.stdout


def test_stalled_and_timed_out_say_what_changed(tmp_path: Path) -> None:
    port = free_port()
    cfg = demo_config(tmp_path, port=port, speed=800.0, shards=3)
    assert run_cli("launch", "--config", str(cfg), "--no-record").returncode == 0
    demo_config(tmp_path, "--hang-rank", "1", port=port, speed=800.0, shards=3)
    hung = run_cli("launch", "--config", str(cfg), "--no-record", "--no-stacks", "--stall", "1", "--timeout", "6")
    assert hung.returncode == 124, hung.stdout + hung.stderr
    lines = hung.stdout.splitlines()
    stalled = next(i for i, ln in enumerate(lines) if "STALLED:" in ln)
    timed_out = lines.index(next(ln for ln in lines if ln.startswith("TIMED OUT after")))
    for part in (lines[stalled:timed_out], lines[timed_out:]):  # under the STALLED line, in the TIMED OUT block
        since, items = _changed("\n".join(part))
        assert SINCE.fullmatch(since) and items == ["--hang-rank 1 added"], lines


def test_a_server_attached_by_pid_is_compared_with_the_last_ready_launch_of_its_command(tmp_path: Path) -> None:
    port = free_port()
    cfg = demo_config(tmp_path, port=port, speed=800.0, shards=3)
    assert run_cli("launch", "--config", str(cfg), "--no-record").returncode == 0
    argv = json.loads(re.search(r"command = (\[.*\])", cfg.read_text()).group(1))  # type: ignore[union-attr]
    by_hand = [w if w != "800.0" else "0.001" for w in argv]  # the same server started by hand, nearly still
    log = tmp_path / "by-hand.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(by_hand, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        waited = run_cli("wait", "--log", str(log), "--pid", str(proc.pid), "--stall", "1", "--timeout", "3",
                         "--no-record", "--no-stacks")
    finally:
        proc.kill()
        proc.wait()
    assert waited.returncode == 124, waited.stdout + waited.stderr
    since, items = _changed(waited.stdout[waited.stdout.index("TIMED OUT after"):])
    assert SINCE.fullmatch(since) and items == ["--speed 800.0 -> 0.001"], waited.stdout
