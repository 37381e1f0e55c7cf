"""The shipped catalogue's parsed entries, kept beside it like bytecode (``__pycache__``).

A start reads them back with ``marshal`` (~1 ms) instead of parsing the TOML files and deriving each
entry's literals (~10 ms). The cache names what it was made from, as a ``.pyc`` does: the size and
modification time of every catalogue file and of the loader's code (core/catalogue.py, core/rules.py),
and the Python version; any difference, or a file it cannot read, means parsing again. Like bytecode
it is written only where the package folder is writable, ``sys.dont_write_bytecode`` is unset and no
``PYTHONPYCACHEPREFIX`` sends bytecode elsewhere, by
one atomic rename.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from symmtui.core.ruletypes import Action, Kind, Rule

FORMAT = 1  # bump when the cached layout changes


def cache_file(folder: Path) -> Path:
    """Where the cache of the catalogue in ``folder`` lives."""
    return folder / "__pycache__" / f"catalogue.{sys.implementation.cache_tag}.marshal"


def load(folder: Path, sources: Sequence[Path], parse: Callable[[], tuple[Rule, ...]]) -> tuple[Rule, ...]:
    """``parse()``'s rules: read from the cache when it was made from ``sources`` as they are now, else
    parsed (and cached, where bytecode would be written)."""
    cache = cache_file(folder)
    try:
        key = _key(sources)
    except OSError:  # a source vanished: no key to trust; parse (which says what is wrong)
        return parse()
    try:
        found, rows = marshal.loads(cache.read_bytes())
        if found == key:
            return tuple(_rule(row) for row in rows)
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        pass  # no cache yet, or one this code does not read: parse and write it again
    rules = parse()
    if not sys.dont_write_bytecode and not sys.pycache_prefix:  # bytecode elsewhere: write nothing here
        _write(cache, marshal.dumps((key, [_row(r) for r in rules])))
    return rules


def _key(sources: Sequence[Path]) -> tuple[Any, ...]:
    stamps = []
    for path in sources:
        st = os.stat(path)
        stamps.append((str(path), st.st_size, st.st_mtime_ns))
    return (FORMAT, sys.version, tuple(stamps))


def _row(rule: Rule) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for f in dataclasses.fields(rule):
        value = getattr(rule, f.name)
        if isinstance(value, Kind):
            value = value.value
        elif isinstance(value, Action):
            value = dataclasses.asdict(value)
        row[f.name] = value
    return row


def _rule(row: dict[str, Any]) -> Rule:
    action = row["action"]
    return Rule(**{**row, "kind": Kind(row["kind"]), "action": Action(**action) if action is not None else None})


def _write(cache: Path, data: bytes) -> None:
    from symmtui.fsatomic import write_atomic

    try:
        cache.parent.mkdir(exist_ok=True)
        write_atomic(cache, data, mode=0o644, durable=False)  # a lost cache costs one parse
    except OSError:
        pass  # a read-only install: every start parses, as without bytecode
