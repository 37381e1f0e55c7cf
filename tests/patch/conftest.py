"""Fixtures for the patch tests: a fresh copy of a layout fixture per test."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

LAYOUTS = Path(__file__).resolve().parent.parent / "fixtures" / "layouts"
SGLANG_DIR = "sglang/srt/distributed/device_communicators"
VLLM_DIR = "vllm/distributed/device_communicators"

# fixture dir -> (package, capability to pass, files holding the two tables)
FIXTURES: dict[str, tuple[str, str, tuple[str, str]]] = {
    "sglang-0.5.3": ("sglang", "12", (f"{SGLANG_DIR}/all_reduce_utils.py", f"{SGLANG_DIR}/symm_mem.py")),
    "sglang-0.5.8": ("sglang", "12", (f"{SGLANG_DIR}/all_reduce_utils.py", f"{SGLANG_DIR}/torch_symm_mem.py")),
    "sglang-0.5.16": ("sglang", "12", (f"{SGLANG_DIR}/all_reduce_utils.py", f"{SGLANG_DIR}/torch_symm_mem.py")),
    "vllm-0.11": ("vllm", "12.0", (f"{VLLM_DIR}/all_reduce_utils.py", f"{VLLM_DIR}/symm_mem.py")),
}


def copy_layout(name: str, dest: Path) -> Path:
    """Copy fixture ``name`` to ``dest/name`` and return that site dir."""
    site = dest / name
    shutil.copytree(LAYOUTS / name, site)
    return site


def snapshot(site: Path) -> dict[str, bytes]:
    """Every file under ``site`` (relative path -> bytes), to prove what did or did not change."""
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


@pytest.fixture
def layout_site(tmp_path: Path) -> Callable[[str], Path]:
    """``layout_site("sglang-0.5.8")`` -> a private copy of that fixture to patch."""

    def make(name: str) -> Path:
        return copy_layout(name, tmp_path)

    return make
