"""Fixtures for the GPU tests: fresh stand-in modules and wrappers over them."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.standin import StandinHost, load_standin

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvml"


@pytest.fixture(autouse=True)
def _no_env_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their NVML explicitly; a stray $SYMMTUI_NVML_STANDIN must not leak in."""
    monkeypatch.delenv("SYMMTUI_NVML_STANDIN", raising=False)


@pytest.fixture
def rtx_mod() -> types.ModuleType:
    return load_standin("rtx-pro-6000-x8-pcie")


@pytest.fixture
def rtx_host(rtx_mod: types.ModuleType) -> StandinHost:
    host: StandinHost = rtx_mod.standin
    return host


@pytest.fixture
def rtx(rtx_mod: types.ModuleType) -> Iterator[Nvml]:
    nvml = Nvml(rtx_mod)
    yield nvml
    nvml.shutdown()


@pytest.fixture
def h200_mod() -> types.ModuleType:
    return load_standin("h200-x2-nvswitch")


@pytest.fixture
def h200(h200_mod: types.ModuleType) -> Iterator[Nvml]:
    nvml = Nvml(h200_mod)
    yield nvml
    nvml.shutdown()
