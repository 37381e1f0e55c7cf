"""`symmtui gpus`: table, topology, JSON schema, debug costs, exit codes; the engine imports nothing heavy."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from symmtui.cli import main
from symmtui.gpu.cli import _watch
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler
from symmtui.gpu.standin import load_standin

ROOT = Path(__file__).resolve().parents[2]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["gpus", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_schema_on_the_rtx_standin(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--standin", "rtx-pro-6000-x8-pcie", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "symmtui.gpus/1"
    assert doc["available"] is True and doc["unavailable_reason"] is None
    assert doc["standin"] == "rtx-pro-6000-x8-pcie"
    assert doc["driver_version"] == "580.95.05" and doc["cuda_version"] == "13.0"
    assert len(doc["gpus"]) == 8
    g = doc["gpus"][0]
    assert g["capability"] == "12.0" and g["family"] == "Blackwell RTX" and g["sm"] == "SM120"
    assert g["memory"]["total_mib"] == 97887 and g["memory"]["used_mib"] == 0 and g["memory"]["reserved_mib"] == 566
    assert g["processes"] == [] and g["lost"] is False and g["na"] == {}
    assert g["pcie"] == {"max_gen": 5, "max_width": 16, "gen": 1, "width": 16}
    topo = doc["topology"]
    assert topo["matrix"][0] == ["X", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]
    assert topo["nvlink_any"] is False and topo["all_capability"] == "12.0"
    assert "no NVLink between any pair: multimem/multicast unavailable" in topo["facts"]
    assert topo["gpu_numa_id"] == [None] * 8
    assert topo["nvlinks"][0] == {"gpu": 0, "active": 0, "versions": [], "links": []}
    assert "debug" not in doc


def test_json_debug_and_the_h200_recording(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--standin", "h200-x2-nvswitch", "--json", "--debug")
    assert code == 0
    doc = json.loads(out)
    assert doc["topology"]["matrix"] == [["X", "NV18"], ["NV18", "X"]]
    assert doc["topology"]["nvlinks"][1]["active"] == 18 and doc["topology"]["nvlinks"][1]["versions"] == [6]
    assert doc["gpus"][0]["na"] == {}
    dbg = doc["debug"]
    assert dbg["nvml_calls_per_sample"] > 0 and dbg["first_sample_seconds"] > 0 and dbg["sample_rounds"] == 50
    assert dbg["sample_median_seconds"] > 0 and dbg["pynvml_import_seconds"] == 0.0  # stand-in: nothing imported
    assert dbg["topology_seconds"] > 0


def test_table_shows_gpus_processes_matrix_and_facts(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMMTUI_NVML_STANDIN", str(_loaded_recording(tmp_path)))
    code, out, _ = _run(capsys, "--debug")
    assert code == 0
    assert "RTX PRO 6000 Blackwell SE" in out and "12.0" in out
    # half loaded: 0.5 * 0.88 * (97887 - 566 reserved) MiB = 42821.2 -> the stand-in holds 42821 MiB
    assert "42821 / 97887" in out
    assert "4194003" in out and "orphan" in out
    assert "GPU0\t" not in out and "GPU0     X      PIX     NODE" in out
    assert "no NVLink between any pair: multimem/multicast unavailable" in out
    assert "first sample of 8 GPUs (cold" in out and "one sample of 8 GPUs, 50 warm rounds: median" in out
    assert "topology (read once)" in out and "nvmlInit:" in out


def _loaded_recording(tmp_path: Path) -> Path:
    """A recording of the RTX host half loaded, so the env-var path replays processes too."""
    from symmtui.gpu.standin.record import record

    mod = load_standin("rtx-pro-6000-x8-pcie")
    mod.standin.set_load(0.5)
    mod.standin.add_process(5, 4_194_555, 1024 * 1024 * 1024, name="orphan")
    path = tmp_path / "rtx-half.json"
    path.write_text(json.dumps(record(mod, "rtx-half")))
    return path


def test_topo_only_prints_p2p_and_nvlinks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--standin", "h200-x2-nvswitch", "--topo")
    assert code == 0
    assert "Used / Total" not in out
    assert "P2P read (nvidia-smi topo -p2p r)" in out and "P2P pci (nvidia-smi topo -p2p p)" in out
    assert "GPU0: 18/18 NVLinks active, version 6, remote: NVSwitch" in out


def test_no_topo_leaves_the_matrix_out(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--standin", "rtx-pro-6000-x8-pcie", "--no-topo")
    assert code == 0 and "Legend" not in out and "No processes hold GPU memory." in out


def test_unknown_standin_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--standin", "dgx-b300")
    assert code == 2
    assert err.startswith("symmtui: error: unknown stand-in scenario 'dgx-b300'; known: ")
    assert out == ""


def test_bad_interval_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--watch", "--interval", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --interval: must be a number of seconds between 0.05" in err


def test_watch_redraws_from_the_sampler() -> None:
    mod = load_standin("rtx-pro-6000-x8-pcie")
    mod.standin.set_load(0.25)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    nvml = Nvml(mod)
    sampler = GpuSampler(nvml, interval=0.05)
    assert _watch(console, nvml, sampler, "rtx-pro-6000-x8-pcie", max_frames=3) == 0
    text = buf.getvalue()
    assert text.count("every 0.05s") >= 3
    assert "21410 / 97887" in text  # a quarter of 0.88 * 97321 MiB
    assert not sampler.running


def test_real_cli_subprocess_exit_3_without_nvml() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SYMMTUI_NVML_STANDIN"}
    env["PYTHONPATH"] = str(ROOT)
    probe = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libnvidia-ml.so.1')"],
                           capture_output=True, env=env, check=False)
    if probe.returncode == 0:
        pytest.skip("this machine has a real libnvidia-ml: the no-NVML exit cannot be produced here")
    proc = subprocess.run([sys.executable, "-m", "symmtui", "gpus"], capture_output=True, text=True, env=env,
                          check=False, timeout=120)
    assert proc.returncode == 3
    assert proc.stdout.strip() == (
        "NVML unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver installed on this host?)"
    )
    proc = subprocess.run([sys.executable, "-m", "symmtui", "gpus", "--json"], capture_output=True, text=True,
                          env=env, check=False, timeout=120)
    assert proc.returncode == 3
    doc = json.loads(proc.stdout)
    assert doc["available"] is False and doc["gpus"] == [] and doc["topology"] is None
    assert doc["unavailable_reason"].startswith("NVML unavailable: ")


def test_gpu_engine_imports_nothing_heavy() -> None:
    code = (
        "import sys, symmtui.gpu.nvml, symmtui.gpu.sampler, symmtui.gpu.topology, symmtui.gpu.standin, "
        "symmtui.gpu.report, symmtui.gpu.smicheck, symmtui.gpu.__main__\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'watchfiles', 'httpx', 'pynvml'))\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=120).stdout
    assert out.strip() == "[]"


def test_module_entry_point_runs_the_verb(tmp_path: Path) -> None:
    env = dict(os.environ, SYMMTUI_NVML_STANDIN="rtx-pro-6000-x8-pcie", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "symmtui.gpu", "--json"], capture_output=True, text=True,
                          env=env, check=False, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["standin"] == "rtx-pro-6000-x8-pcie"


def test_verb_module_is_thin() -> None:
    """Building the parser imports no GPU code, only the argparse options (the CLI imports every verb for --help)."""
    code = (
        "import argparse, sys\n"
        "from symmtui.verbs import gpus\n"
        "parser = argparse.ArgumentParser(); gpus.add_arguments(parser)\n"
        "args = parser.parse_args(['--json', '--interval', '2.5'])\n"
        "print(args.json, args.interval, args.watch, sorted(m for m in sys.modules if m.startswith('symmtui.gpu')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=120).stdout
    assert out.strip() == "True 2.5 False ['symmtui.gpu', 'symmtui.gpu.options']"


def test_topo_and_no_topo_together_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--topo", "--no-topo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not allowed with argument" in err


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "cannot read"),
        ("not json at all", "is not valid JSON"),
        ("[]", 'is not a stand-in recording (no "devices" list)'),
        ('{"devices": []}', 'is not a stand-in recording (no "devices" list)'),
    ],
)
def test_unreadable_standin_recording_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, words: str
) -> None:
    path = tmp_path / "recording.json"
    if content is not None:
        path.write_text(content)
    code, out, err = _run(capsys, "--standin", str(path), "--json")
    assert code == 2 and out == ""
    assert err.startswith("symmtui: error: --standin: ") and words in err
    assert err.count("\n") == 1


def test_json_into_a_closed_pipe_ends_quietly() -> None:
    """`symmtui gpus --json | head -1`: the reader goes away; no traceback, no error line."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "symmtui", "gpus", "--standin", "rtx-pro-6000-x8-pcie", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the child has written anything: its first write fails with EPIPE
    try:
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert err == ""


def test_watch_json_prints_one_document_per_sample(capsys: pytest.CaptureFixture[str]) -> None:
    from symmtui.gpu.cli import gpus_main

    args = argparse.Namespace(json=True, watch=True, topo=False, no_topo=False, interval=0.05, debug=False,
                              standin="rtx-pro-6000-x8-pcie", max_frames=3)
    assert gpus_main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    docs = [json.loads(line) for line in lines]
    assert len(docs) == 3
    assert docs[0]["topology"]["matrix"][0][1] == "PIX" and docs[1]["topology"] is None
    assert [len(d["gpus"]) for d in docs] == [8, 8, 8]
    assert docs[0]["time"] <= docs[1]["time"] <= docs[2]["time"]


def test_ctrl_c_ends_watch_with_exit_0() -> None:
    import signal

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SYMMTUI_NVML_STANDIN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "symmtui", "gpus", "--standin", "rtx-pro-6000-x8-pcie", "--watch", "--json",
         "--interval", "0.05"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline(), proc.stdout.readline()
        assert json.loads(first)["topology"] is not None and json.loads(second)["topology"] is None
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
