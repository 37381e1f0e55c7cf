"""Records with fields aside from their value: ``==``, ``hash`` and the bundle leave the ``ASIDE`` fields out."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, ClassVar

_VALUES: dict[type[Any], attrgetter[Any]] = {}  # a record class -> the getter of the fields that are its value


class Aside:
    """A mixin before ``msgspec.Struct``: the fields named in ``ASIDE`` ride along (a compiled program, the rule
    that made an event, a card's uuid) and are neither compared, hashed nor recorded."""

    __slots__ = ()
    ASIDE: ClassVar[tuple[str, ...]] = ()

    def _value(self) -> Any:
        cls = type(self)
        get = _VALUES.get(cls)
        if get is None:
            names = cls.__struct_fields__  # type: ignore[attr-defined]
            get = _VALUES[cls] = attrgetter(*(name for name in names if name not in cls.ASIDE))
        return get(self)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return bool(self._value() == other._value())

    def __hash__(self) -> int:
        return hash(self._value())
