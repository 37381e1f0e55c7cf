"""`symmtui wait` as a real process: exit codes 0 / 1 / 124 / 2 and what it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.corpus import read_to_the_end

from .engine_kit import KEYERROR_LOG, READY_LOG, Health, Writer, env, http_server, symmtui_cmd


def _wait(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(symmtui_cmd("wait", "--no-record", *args), capture_output=True, text=True, timeout=timeout, env=env())


def test_ready_log_exits_0() -> None:
    r = _wait("--log", str(READY_LOG))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.endswith("] loading weights") and ln.startswith("[") for ln in lines)
    assert [ln for ln in lines if ln.startswith("READY after ")]


def test_crash_log_exits_1_with_cause_block_and_diagnosis() -> None:
    r = _wait("--log", str(KEYERROR_LOG))
    assert r.returncode == 1, r.stderr
    out = r.stdout
    head = [ln for ln in out.splitlines() if ln.startswith("CRASHED after ")]
    assert head and head[0].endswith(": KeyError: 12 at torch_symm_mem.py:83 (8 ranks)")
    assert "  | KeyError: 12" in out
    assert "compute capability 12" in out and "symmtui patch apply" in out
    assert "Received sigquit" in out  # the secondary error is listed


# What `wait --log --no-record` on a short finished log with no URL, no webhook and no [notify] has no
# use for: the prober (httpx, ssl, a thread pool), the patch engine, the bundle recorder, the notifier,
# the launch history, the log command's follower, the batch prefilter (a short log is judged line by line),
# typing_extensions and inspect (msgspec's import tries them: symmtui.boundary keeps them out).
_UNUSED_BY_WAIT = ("httpx", "ssl", "symmtui.patch", "symmtui.bringup.probe", "symmtui.bundle.recorder",
                   "symmtui.notify.notifier", "symmtui.launch.history", "symmtui.logs.logcmd",
                   "symmtui.judge.litscan", "hyperscan", "anyio", "typing_extensions", "inspect")


def test_wait_on_a_log_loads_none_of_what_it_does_not_use() -> None:
    """`wait --log` never imports what it does not use (httpx, the patch engine, the prober, the
    recorder with --no-record ...): every `wait`, `launch` and `stop` (and every test that starts one)
    would pay for them at start (`python -m bench.startup`)."""
    code = ("import runpy, sys\n"
            f"sys.argv = ['symmtui', 'wait', '--log', {str(KEYERROR_LOG)!r}, '--stall', '0', '--no-record']\n"
            "try:\n    runpy.run_module('symmtui', run_name='__main__')\n"
            "except SystemExit as e:\n    code = e.code\n"
            f"bad = sorted(m for m in sys.modules if any(m == u or m.startswith(u + '.') for u in {_UNUSED_BY_WAIT!r}))\n"
            "print('exit', code, bad, file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env())
    assert r.stderr.splitlines()[-1] == "exit 1 []", r.stderr


def test_started_before_the_log_exists_then_ready(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "server.log"
    proc = subprocess.Popen(symmtui_cmd("wait", "--log", str(log), "--timeout", "60", "--no-record"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the "waiting for ..." notice: it is watching
        assert "waiting" in first
        log.parent.mkdir()
        with Writer(log) as w:
            w.write(READY_LOG.read_text())
            out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "READY after" in out


def test_timeout_exits_124_with_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:13 TP0] Load weight begin. avail mem=93.21 GB\nsomething slow\n")
    for timeout in (0.3, 0.6, 1.2, 2.4):  # until the TIMED OUT block shows the log was read (a loaded machine)
        r = _wait("--log", str(log), "--timeout", f"{timeout:g}")
        assert r.returncode == 124, r.stderr
        if read_to_the_end(r.stdout, log):
            break
    assert f"TIMED OUT after {timeout:.1f} s" in r.stdout
    assert "last phase: loading weights" in r.stdout and "    something slow" in r.stdout


def test_pid_killed_exits_1(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:09 TP0] Init torch distributed begin.\n")
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        waiter = subprocess.Popen(symmtui_cmd("wait", "--log", str(log), "--pid", str(child.pid), "--no-record"),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        assert waiter.stdout is not None
        assert "init distributed" in waiter.stdout.readline()
        child.kill()
        out, err = waiter.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert waiter.returncode == 1, err
    assert "CRASHED after" in out and "process killed by signal 9 (SIGKILL) before it was ready" in out
    assert "--- first error" not in out  # no log error to show: the headline says it all


def test_url_only_ready(tmp_path: Path) -> None:
    with http_server(Health(200)) as url:
        r = _wait("--url", url, "--timeout", "30")
    assert r.returncode == 0, r.stderr
    assert "READY after" in r.stdout and "answered 200" in r.stdout


def test_user_ready_and_crash_patterns(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("booting\nALL SYSTEMS GO\n")
    assert _wait("--log", str(log), "--ready", r"ALL SYSTEMS \w+").returncode == 0
    log.write_text("booting\nmy-app: fatal: disk on fire\n")
    r = _wait("--log", str(log), "--crash", "fatal: .* on fire")
    assert r.returncode == 1 and "fatal: disk on fire" in r.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    r = _wait("--log", str(tmp_path / "x.log"), "--crash", "oops(")
    assert r.returncode == 2 and "bad crash pattern 'oops('" in r.stderr and "missing )" in r.stderr
    r = _wait("--log", str(tmp_path / "x.log"), "--timeout", "-5")
    assert r.returncode == 2 and "argument --timeout: must be a number of seconds" in r.stderr
    r = _wait()
    assert r.returncode == 2 and "nothing to watch" in r.stderr
    r = _wait("--url", "localhost:30000")
    assert r.returncode == 2 and "bad --url" in r.stderr
    r = _wait("--log", str(tmp_path))
    assert r.returncode == 2 and "is a directory" in r.stderr


def test_stalled_is_reported_and_waiting_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 09:40:13 TP0] Load weight begin. avail mem=93.21 GB\n")
    for stall, timeout in ((0.2, 0.8), (0.4, 1.6), (0.8, 3.2)):  # a loaded machine: asked again, slower
        r = _wait("--log", str(log), "--stall", f"{stall:g}", "--timeout", f"{timeout:g}")
        assert r.returncode == 124, r.stderr
        lines = r.stdout.splitlines()
        stalled = [ln for ln in lines if "STALLED: no new line and no progress" in ln]
        if stalled:
            break
    assert stalled and "still waiting" in stalled[0], r.stdout
    assert lines.index(stalled[0]) < lines.index(f"TIMED OUT after {timeout:.1f} s")


def test_vllm_log_ready_on_application_startup_complete(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "(APIServer pid=7) INFO 10-29 06:48:05 [api_server.py:1] vLLM API server version 0.11.0\n"
        "(Worker_TP0 pid=11) INFO 10-29 06:48:09 [gpu_model_runner.py:1] Starting to load model /m\n"
        "(APIServer pid=7) INFO:     Started server process [7]\n"
        "(APIServer pid=7) INFO:     Application startup complete.\n"
    )
    r = _wait("--log", str(log))
    assert r.returncode == 0, r.stdout
    assert "loading weights" in r.stdout and "READY after" in r.stdout


def test_old_verdict_from_an_earlier_launch_in_the_same_log_is_not_reused(tmp_path: Path) -> None:
    """`server ... >> server.log`: the old run's READY must not answer for the new launch."""
    log = tmp_path / "server.log"
    new_start = "[2026-11-30 08:00:00] server_args=ServerArgs(model_path='/models/M', tp_size=8)\n"
    log.write_text(READY_LOG.read_text() + new_start + "[2026-11-30 08:00:06 TP0] Init torch distributed begin.\n")
    for timeout in (0.3, 0.6, 1.2, 2.4):  # TIMED OUT counts once wait shows it judged the log to its end
        r = _wait("--log", str(log), "--timeout", f"{timeout:g}")
        assert r.returncode == 124, r.stdout
        if read_to_the_end(r.stdout, log):
            break
    assert read_to_the_end(r.stdout, log), r.stdout
    log.write_text(READY_LOG.read_text() + new_start + KEYERROR_LOG.read_text())
    r = _wait("--log", str(log))
    assert r.returncode == 1 and "launches; the verdict is about the last one" in r.stdout


def test_reader_gone_keeps_the_exit_code(tmp_path: Path) -> None:
    """`symmtui wait ... | head -0`: stdout's reader is gone before the first line; still exit 1, no traceback."""
    import os

    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run(symmtui_cmd("wait", "--log", str(KEYERROR_LOG), "--no-record"), stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=60, env=env())
    finally:
        os.close(w)
    assert proc.returncode == 1 and proc.stderr == ""


def test_scan_reader_gone_keeps_the_exit_code(tmp_path: Path) -> None:
    import os

    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run(symmtui_cmd("scan", str(KEYERROR_LOG)), stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=60, env=env())
    finally:
        os.close(w)
    assert proc.returncode == 1 and proc.stderr == ""
