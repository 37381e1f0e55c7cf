"""The default time limits of a wait, in seconds: apart from the engine, so reading a profile does not import it."""

from __future__ import annotations

DEFAULT_TIMEOUT = 900.0  # seconds to READY before TIMED OUT (profiles and verbs default to this)
DEFAULT_STALL = 300.0  # seconds without a new line or progress before STALLED
