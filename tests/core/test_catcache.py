"""The shipped catalogue's cache: read back equal to a fresh parse, made again when a file it came from changes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from symmtui.core import catcache
from symmtui.core.catalogue import SHIPPED, builtin_entries, parse_builtin, parse_text
from symmtui.core.rules import Rule


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for f in SHIPPED.glob("*.toml"):
        shutil.copyfile(f, tmp_path / f.name)
    return tmp_path


def _sources(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.toml"))


def _parser(folder: Path, calls: list[int]) -> Callable[[], tuple[Rule, ...]]:
    def parse() -> tuple[Rule, ...]:
        calls.append(1)
        return tuple(r for f in _sources(folder) for r in parse_text(f.read_text(), f.name, check_patterns=False))
    return parse


def test_a_second_load_reads_the_cache_and_gives_the_same_rules(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    calls: list[int] = []
    first = catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert catcache.cache_file(folder).is_file() and calls == [1]
    again = catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert calls == [1] and again == first and len(first) > 80
    assert [type(r.kind) for r in again] == [type(r.kind) for r in first]


def test_a_changed_file_or_a_broken_cache_is_parsed_again(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    calls: list[int] = []
    catcache.load(folder, _sources(folder), _parser(folder, calls))
    hangs = folder / "50-hangs.toml"
    hangs.write_text(hangs.read_text().replace('phase = "NCCL init"', 'phase = "weight loading"', 1))
    changed = catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert calls == [1, 1] and changed == _parser(folder, [])()
    catcache.cache_file(folder).write_bytes(b"\x00garbage")
    assert catcache.load(folder, _sources(folder), _parser(folder, calls)) == changed
    assert calls == [1, 1, 1]
    assert catcache.load(folder, _sources(folder), _parser(folder, calls)) == changed
    assert calls == [1, 1, 1]  # written again


@pytest.mark.parametrize("setting", ["PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"])
def test_nothing_is_written_where_bytecode_is_not(folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  setting: str) -> None:
    if setting == "PYTHONDONTWRITEBYTECODE":
        monkeypatch.setattr(sys, "dont_write_bytecode", True)
    else:  # bytecode goes to another tree: the package folder gets nothing
        monkeypatch.setattr(sys, "dont_write_bytecode", False)
        monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    calls: list[int] = []
    catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert not catcache.cache_file(folder).exists() and calls == [1]


def test_the_shipped_catalogue_loads_the_same_cached_or_parsed() -> None:
    code = ("from symmtui.core.catalogue import builtin_entries, parse_builtin\n"
            "print(builtin_entries() == parse_builtin())\n")
    for _ in range(2):  # the first may write the cache, the second reads it
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        assert r.stdout.strip() == "True", r.stderr
    assert builtin_entries() == parse_builtin()
