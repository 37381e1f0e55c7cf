"""The SM120 patch for SGLang / vLLM symmetric-memory tables: check, diff, apply, revert, preflight."""

from __future__ import annotations

from symmtui.patch.capability import Capability
from symmtui.patch.engine import apply, check, diff, revert
from symmtui.patch.errors import PatchError, Refused, UnsupportedLayout
from symmtui.patch.finder import PackageNotFound
from symmtui.patch.preflight import Prediction, preflight
from symmtui.patch.report import ApplyResult, CheckReport, RevertResult, TableStatus

__all__ = [
    "ApplyResult",
    "Capability",
    "CheckReport",
    "PackageNotFound",
    "PatchError",
    "Prediction",
    "Refused",
    "RevertResult",
    "TableStatus",
    "UnsupportedLayout",
    "apply",
    "check",
    "diff",
    "preflight",
    "revert",
]
