"""CUDA compute capability as the patch needs it: parsed from the user, mapped to each table's key."""

from __future__ import annotations

import re
from typing import Literal

from msgspec import Struct

from symmtui.errors import UserError

KeyKind = Literal["int", "str"]
"""How a release keys its tables: SGLang by the major number (``12``), vLLM by ``"M.m"`` (``"12.0"``)."""

TableKey = int | str

_CAP_RE = re.compile(r"^\s*(?:sm[_ ]?(?P<sm>\d{2,3})|(?P<major>\d{1,2})(?:\.(?P<minor>\d))?)\s*$", re.IGNORECASE)


class Capability(Struct, frozen=True):
    """A compute capability: ``major`` and, when known, ``minor`` (``12`` or ``12.0``)."""

    major: int
    minor: int | None = None

    @classmethod
    def parse(cls, text: str) -> Capability:
        """``"12"``, ``"12.0"``, ``"12.1"`` or ``"sm120"``; anything else is a UserError (exit 2)."""
        m = _CAP_RE.match(text)
        if m is None:
            raise UserError(
                f"bad capability {text!r}: pass the GPUs' compute capability, e.g. --capability 12 or 12.0"
            )
        if m.group("sm"):
            sm = int(m.group("sm"))
            cap = cls(sm // 10, sm % 10)
        else:
            minor = m.group("minor")
            cap = cls(int(m.group("major")), int(minor) if minor is not None else None)
        if not 1 <= cap.major <= 99:
            raise UserError(f"bad capability {text!r}: the major number must be 1..99 (e.g. 12)")
        return cap

    @classmethod
    def of(cls, value: Capability | str | int | float | tuple[int, int]) -> Capability:
        """Accept the forms callers hold: a Capability, ``"12.0"``, ``12``, ``(12, 0)``."""
        if isinstance(value, Capability):
            return value
        if isinstance(value, tuple):
            return cls(int(value[0]), int(value[1]))
        if isinstance(value, bool):
            raise UserError(f"bad capability {value!r}: pass e.g. 12 or 12.0")
        if isinstance(value, int):
            return cls.parse(str(value))
        return cls.parse(str(value))

    def key(self, kind: KeyKind) -> TableKey:
        """This capability as a table key: ``12`` for SGLang, ``"12.0"`` for vLLM (minor 0 when unknown)."""
        if kind == "int":
            return self.major
        return f"{self.major}.{self.minor if self.minor is not None else 0}"

    def __str__(self) -> str:
        return str(self.major) if self.minor is None else f"{self.major}.{self.minor}"


def key_text(key: TableKey) -> str:
    """How a key is shown to the user: ``12`` or ``"12.0"`` (as it is written in the source)."""
    return f'"{key}"' if isinstance(key, str) else str(key)
