"""The suite's faster Pilot key wait (tests/conftest.py) is in effect: Textual still reads the two settings it sets."""

from __future__ import annotations

import inspect

import textual._wait


def test_pilot_key_wait_reads_the_settings_the_suite_sets() -> None:
    source = inspect.getsource(textual._wait.wait_for_idle)
    assert "SLEEP_GRANULARITY" in source and "SLEEP_IDLE" in source, "Textual changed wait_for_idle: see conftest.py"
    assert (textual._wait.SLEEP_GRANULARITY, textual._wait.SLEEP_IDLE) == (0.005, 0.0005)
