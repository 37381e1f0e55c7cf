"""How NVML answers are written to JSON and read back: {"v": value} or {"e": error code}; structs as dicts."""

from __future__ import annotations

from typing import Any


class Struct:
    """A read-only-ish attribute bag standing for a pynvml ctypes struct (``mem.used``, ``pci.busId``)."""

    __slots__ = ("__dict__",)

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"Struct({inner})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]


def to_json(value: Any) -> Any:
    """A pynvml return value (ctypes struct, friendly object, bytes, list) as plain JSON data."""
    if isinstance(value, bytes):
        return {"__bytes__": value.decode("utf-8", "replace")}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    fields = getattr(value, "_fields_", None)
    if fields is not None and not isinstance(value, type):
        return {"__struct__": {name: to_json(getattr(value, name)) for name, *_ in fields}}
    if hasattr(value, "__dict__"):
        return {"__struct__": {k: to_json(v) for k, v in vars(value).items() if not k.startswith("_")}}
    try:  # ctypes arrays (cpu affinity masks)
        return [to_json(v) for v in value]
    except TypeError:
        return repr(value)


def from_json(data: Any) -> Any:
    """The inverse of :func:`to_json`: dicts become :class:`Struct`, bytes markers become bytes."""
    if isinstance(data, list):
        return [from_json(v) for v in data]
    if isinstance(data, dict):
        if "__bytes__" in data:
            return str(data["__bytes__"]).encode()
        if "__struct__" in data:
            return Struct(**{k: from_json(v) for k, v in data["__struct__"].items()})
        return {k: from_json(v) for k, v in data.items()}
    return data


def result_key(fn: str, arg: object | None = None) -> str:
    """The key one call's answer is stored under: ``fn`` or ``fn:arg`` (link index, sensor, p2p index...)."""
    return fn if arg is None else f"{fn}:{arg}"
