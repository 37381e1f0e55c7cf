"""The shipped catalogue's parsed entries (and the engine table), cached in the user's cache directory (``$XDG_CACHE_HOME/symmtui``).

A start reads them back with ``marshal`` (~1 ms) instead of parsing the TOML files and deriving each
entry's literals (~15 ms). The cache names what it was made from, as a ``.pyc`` does: the path, size
and modification time of every catalogue file and of the loader's code, and the Python version; any
difference, or a file it cannot read, means parsing again. One file per catalogue folder (two
installs do not overwrite each other's), written by one atomic rename; an unwritable cache
directory means parsing at every start. Unlike bytecode it does not depend on
``PYTHONDONTWRITEBYTECODE`` (which these machines set) or on the package folder being writable.
"""

from __future__ import annotations

import binascii
import marshal
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from msgspec.structs import asdict

from symmtui import boundary
from symmtui.errors import InputError
from symmtui.paths import cache_dir
from symmtui.tables.ruletypes import Action, Kind, Rule

FORMAT = 1  # bump when the cached layout changes
MAX_BYTES = 8 << 20  # the cache of the shipped catalogue is ~0.2 MB


def cache_file(folder: Path, kind: str = "catalogue") -> Path:
    """Where the cache of the ``kind`` ("catalogue", "engines") read from ``folder`` lives."""
    tag = binascii.crc32(os.fsencode(os.path.abspath(folder)))
    return cache_dir() / f"{kind}-{tag:08x}.{sys.implementation.cache_tag}.marshal"


def load(folder: Path, sources: Sequence[Path], parse: Callable[[], tuple[Rule, ...]]) -> tuple[Rule, ...]:
    """``parse()``'s rules: read from the cache when it was made from ``sources`` as they are now, else
    parsed (and cached, where bytecode would be written)."""
    rows = load_data(folder, sources, lambda: [_row(r) for r in parse()], "catalogue")
    try:
        return tuple(_rule(row) for row in rows)
    except (TypeError, KeyError, ValueError):  # a cache this code does not read (its key matched): parse again
        rules = parse()
        write(cache_file(folder), marshal.dumps((_key(sources), [_row(r) for r in rules])))
        return rules


def load_data(folder: Path, sources: Sequence[Path], parse: Callable[[], Any], kind: str) -> Any:
    """``parse()``'s plain data (what ``marshal`` writes: dicts, lists, tuples, strings, numbers), read from
    the cache of ``kind`` when it was made from ``sources`` as they are now, else parsed and cached."""
    cache = cache_file(folder, kind)
    try:
        key = _key(sources)
    except OSError:  # a source vanished: no key to trust; parse (which says what is wrong)
        return parse()
    try:
        # Read like any file from outside: a FIFO or a huge file there never blocks or fills memory.
        found, data = marshal.loads(boundary.read_bytes(cache, what=f"the {kind} cache", max_bytes=MAX_BYTES))
        if found == key:
            return data
    except (InputError, OSError, EOFError, ValueError, TypeError, KeyError):
        pass  # no cache yet, not a regular file, or one this code does not read: parse and write it again
    data = parse()
    write(cache, marshal.dumps((key, data)))
    return data


def _key(sources: Sequence[Path]) -> tuple[Any, ...]:
    stamps = []
    for path in sources:
        st = os.stat(path)
        stamps.append((str(path), st.st_size, st.st_mtime_ns))
    return (FORMAT, sys.version, tuple(stamps))


def _row(rule: Rule) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name in rule.__struct_fields__:
        value = getattr(rule, name)
        if isinstance(value, Kind):
            value = value.value
        elif isinstance(value, Action):
            value = asdict(value)
        row[name] = value
    return row


def _rule(row: dict[str, Any]) -> Rule:
    action = row["action"]
    return Rule(**{**row, "kind": Kind(row["kind"]), "action": Action(**action) if action is not None else None})


def write(cache: Path, data: bytes) -> None:
    """Write one cache file atomically; a cache directory that cannot be written is no error (the next start
    makes it again)."""
    # here: writing a cache is a miss's cost; a start that reads the cache writes nothing
    from symmtui.fsatomic import write_atomic

    try:
        # $XDG_CACHE_HOME and symmtui's folder in it, nothing above: a folder gone is not made again (the demo's
        # temp dir, removed at its quit while a judging thread still compiled a Hyperscan database, came back)
        for folder in (cache.parent.parent, cache.parent):
            folder.mkdir(exist_ok=True, mode=0o700)
        write_atomic(cache, data, mode=0o600, durable=False)  # a lost cache costs one parse
    except OSError:
        pass  # no usable cache directory (HOME=/dev/null, read-only): every start parses
