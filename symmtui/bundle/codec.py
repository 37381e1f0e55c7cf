"""The bundle's JSON form of the Session's records (Boards, events, snapshots, GPU info, topology, rank summaries).

A tagged encoding over a fixed list of frozen records (msgspec Structs): ``{"@": "Event", "summary": ...}``; tuples
become lists and come back as tuples, ``frozenset`` is ``{"@fs": [...]}``, the enums ``{"@e": "State",
"v": "ready"}``, NVML's NA ``{"@": "NA"}``. Decoding builds only the classes listed in :data:`CLASSES`
(never a name taken from the file), so a hand-edited bundle cannot make symmtui construct anything
else; a field a class does not have is ValueError. Fields a class keeps aside from its value
(``ASIDE``: an event's catalogue entry) are not kept: they come back as their default.

Reading a file back is bounded whatever it holds: :func:`gunzip` stops at its cap (a gzip bomb costs
the cap, not what it would expand to), :func:`check_depth` refuses JSON nested deeper than any
bundle symmtui writes, and :func:`decode` stops at :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from enum import Enum
from typing import Any

from msgspec import Struct

from symmtui.aside import Aside
from symmtui.gpu.results import NA, GpuInfo, NAType, NvLink
from symmtui.gpu.topology import Topology
from symmtui.judge.board import Board, Eta, NodeBoard, Relaunch, Said
from symmtui.judge.events import Event
from symmtui.judge.ranks import RankState, RankSummary
from symmtui.judge.readiness import PhaseSpan, Snapshot, State
from symmtui.judge.rules import Action, Kind
from symmtui.judge.verdict import Changes

CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls for cls in (Event, Snapshot, PhaseSpan, RankSummary, RankState, GpuInfo, NvLink,
                                  Board, NodeBoard, Said, Eta, Relaunch, Action, Changes)
}
ENUMS: dict[str, type[Enum]] = {"State": State, "Kind": Kind}


def _known(name: str) -> type[Any] | None:
    """A class the bundle keeps; the topology's module (NVML) is loaded only when one is met."""
    if name == "Topology" and name not in CLASSES:
        CLASSES[name] = Topology
    return CLASSES.get(name)
MAX_DEPTH = 32
MAX_JSON_DEPTH = 48  # a bundle document's deepest list or object (the records' own nesting is under 16)
GUNZIP_STEP = 1 << 20  # output per decompress call: memory is the cap plus this
_FIELDS: dict[type[Any], tuple[str, ...]] = {}  # a kept class -> the fields kept (not ASIDE), in order


def _kept(cls: type[Struct]) -> tuple[str, ...]:
    """The fields of ``cls`` the bundle keeps: all but those it holds aside from its value (``symmtui.aside``)."""
    aside = cls.ASIDE if issubclass(cls, Aside) else ()
    return tuple(name for name in cls.__struct_fields__ if name not in aside)


def encode(value: Any) -> Any:
    """``value`` (one of CLASSES, or plain data of them) as JSON-ready data."""
    if isinstance(value, Enum):  # before str: State and Kind are StrEnums
        return {"@e": type(value).__name__, "v": value.value}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, NAType):
        return {"@": "NA"}
    if isinstance(value, frozenset | set):
        return {"@fs": sorted((encode(v) for v in value), key=repr)}
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {"@m": {str(k): encode(v) for k, v in value.items()}}
    names = _FIELDS.get(type(value))
    if names is None and isinstance(value, Struct):
        name = type(value).__name__
        if _known(name) is not type(value):
            raise TypeError(f"the bundle does not keep {name}")
        names = _FIELDS[type(value)] = _kept(type(value))
    if names is not None:
        out: dict[str, Any] = {"@": type(value).__name__}
        for key in names:
            out[key] = encode(getattr(value, key))
        return out
    raise TypeError(f"the bundle does not keep {type(value).__name__}")


def decode(data: Any, depth: int = 0) -> Any:
    """:func:`encode`'s data back as objects; ValueError for anything it would not have written."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deep")
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return tuple(decode(v, depth + 1) for v in data)
    if not isinstance(data, dict):
        raise ValueError(f"unexpected {type(data).__name__}")
    if "@fs" in data:
        items = data["@fs"]
        if not isinstance(items, list):
            raise ValueError("a set that is not a list")
        return frozenset(decode(v, depth + 1) for v in items)
    if "@m" in data:
        inner = data["@m"]
        if not isinstance(inner, dict):
            raise ValueError("a mapping that is not an object")
        return {str(k): decode(v, depth + 1) for k, v in inner.items()}
    if "@e" in data:
        enum = ENUMS.get(str(data["@e"]))
        if enum is None:
            raise ValueError(f"unknown enum {data['@e']!r}")
        return enum(data.get("v"))
    name = data.get("@")
    if name == "NA":
        return NA
    cls = _known(str(name))
    if cls is None:
        raise ValueError(f"unknown record {name!r}")
    known = set(_kept(cls))
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "@":
            continue
        if key not in known:
            raise ValueError(f"{name} has no field {key!r}")
        kwargs[key] = decode(value, depth + 1)
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"{name}: {exc}") from None


def decode_as(data: Any, cls: type[Any]) -> Any:
    """:func:`decode` that must give a ``cls``."""
    value = decode(data)
    if not isinstance(value, cls):
        raise ValueError(f"expected {cls.__name__}, got {type(value).__name__}")
    return value


class TooLarge(ValueError):
    """More data than the cap allows (decompressed, or nested)."""


def gunzip(data: bytes, cap: int) -> bytes:
    """``data`` (one or more gzip members) decompressed, in steps of :data:`GUNZIP_STEP`; TooLarge as soon
    as the output passes ``cap``, so memory and time stay bounded by the cap. zlib.error / EOFError for
    a damaged or cut stream, as :func:`gzip.decompress` gives."""
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            chunk = d.decompress(rest, min(GUNZIP_STEP, cap + 1 - len(out)))
            out += chunk
            if len(out) > cap:
                raise TooLarge(f"over {cap >> 20} MiB uncompressed")
            rest = d.unconsumed_tail
            if d.eof or (not chunk and not rest):
                break
        if not d.eof:
            raise EOFError("the gzip stream ends before its end marker")
        rest = d.unused_data.lstrip(b"\x00")  # the next member, if any (gzip allows trailing zeros)
    return bytes(out)


def check_depth(data: Any, limit: int = MAX_JSON_DEPTH) -> None:
    """TooLarge when lists and objects in ``data`` nest deeper than ``limit`` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 0)] if isinstance(data, dict | list) else []
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth >= limit:
            raise TooLarge(f"nested deeper than {limit} levels")
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
