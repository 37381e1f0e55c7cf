"""The demo sandbox: a fake sglang install the patcher treats like the real 0.5.5+ layout."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from symmtui.demo.sandbox import sandbox_has_capability, write_sandbox
from symmtui.patch import apply, check, preflight, revert


def test_sandbox_is_a_crashing_0_5_8(tmp_path: Path) -> None:
    box = write_sandbox(tmp_path / "box")
    report = check(box.site, "sglang", "12")
    assert report.version == "0.5.8" and report.layout == "sglang-torch-symm-mem"
    assert report.state == "needed" and report.outcome == "crash"
    assert not sandbox_has_capability(box.site, 12)
    assert sandbox_has_capability(box.site, 10) and sandbox_has_capability(box.package, "9.0")
    argv = ["python", "-m", "sglang.launch_server", "--tp", "8", "--enable-torch-symm-mem"]
    assert preflight(argv, 12, box.site) is not None


def test_patch_then_revert_flips_the_answer(tmp_path: Path) -> None:
    box = write_sandbox(tmp_path / "box", version="0.5.9")
    apply(box.site, "sglang", "12")
    assert sandbox_has_capability(box.site, 12)
    revert(box.site, "sglang")
    assert not sandbox_has_capability(box.site, 12)


def test_default_location_is_a_fresh_temp_dir() -> None:
    box = write_sandbox()
    try:
        assert box.site.is_dir() and (box.site / "sglang-0.5.8.dist-info" / "METADATA").is_file()
        # every sandbox file is valid Python (compiled here, never imported)
        for f in box.package.rglob("*.py"):
            compile(f.read_bytes(), str(f), "exec")
    finally:
        shutil.rmtree(box.site)


def test_broken_sandbox_reads_as_missing(tmp_path: Path) -> None:
    box = write_sandbox(tmp_path / "box")
    (box.package / "srt/distributed/device_communicators/all_reduce_utils.py").write_text("T = (\n")
    assert not sandbox_has_capability(box.site, 10)
    assert not sandbox_has_capability(tmp_path / "nothing-here", 12)


def test_sandbox_module_imports_nothing_heavy() -> None:
    code = "import sys, symmtui.demo.sandbox as s; print(sorted(m for m in ('torch', 'textual', 'sglang') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
