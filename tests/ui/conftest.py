"""Dashboard test settings: the `slow` marker (the wheel test)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: builds a wheel and a venv (tens of seconds)")
