"""symmtui: watch, diagnose and fix the bring-up of tensor-parallel LLM inference servers."""

from __future__ import annotations

__version__ = "0.1.0"
