"""The shipped catalogue's cache: read back equal to a fresh parse, made again when a file it came from changes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from symmtui.judge.rules import Rule
from symmtui.tables import catcache
from symmtui.tables.catalogue import SHIPPED, builtin_entries, parse_builtin, parse_text


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cat = tmp_path / "catalogue"
    cat.mkdir()
    for f in SHIPPED.glob("*.toml"):
        shutil.copyfile(f, cat / f.name)
    return cat


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
def test_written_to_the_cache_directory_whatever_the_bytecode_settings(
        folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str) -> None:
    """These machines set PYTHONDONTWRITEBYTECODE: the cache is still written (in the user's cache
    directory, never the package folder), and read back."""
    if setting == "PYTHONDONTWRITEBYTECODE":
        monkeypatch.setattr(sys, "dont_write_bytecode", True)
    else:
        monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    calls: list[int] = []
    catcache.load(folder, _sources(folder), _parser(folder, calls))
    cache = catcache.cache_file(folder)
    assert cache.is_file() and cache.is_relative_to(tmp_path / "cache") and calls == [1]
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in _sources(folder))
    catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert calls == [1]


def test_two_catalogue_folders_keep_their_own_cache(folder: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    assert catcache.cache_file(folder) != catcache.cache_file(other)


def test_an_unusable_cache_directory_means_parsing(folder: Path, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "afile"))
    calls: list[int] = []
    first = catcache.load(folder, _sources(folder), _parser(folder, calls))
    again = catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert calls == [1, 1] and first == again


def test_the_cache_makes_its_own_folders_but_never_one_above_them(folder: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    calls: list[int] = []
    catcache.load(folder, _sources(folder), _parser(folder, calls))  # $XDG_CACHE_HOME itself missing: made
    assert list((tmp_path / "cache" / "symmtui").iterdir())
    gone = tmp_path / "demo-temp-dir"  # the demo's XDG_CACHE_HOME lives in its temp dir, removed at its quit
    monkeypatch.setenv("XDG_CACHE_HOME", str(gone / "xdg_cache_home"))
    catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert calls == [1, 1] and not gone.exists()


def test_the_shipped_catalogue_loads_the_same_cached_or_parsed(tmp_path: Path) -> None:
    code = ("from symmtui.tables.catalogue import builtin_entries, parse_builtin\n"
            "print(builtin_entries() == parse_builtin())\n")
    for _ in range(2):  # the first may write the cache, the second reads it
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
        assert r.stdout.strip() == "True", r.stderr
    assert builtin_entries() == parse_builtin()


def test_a_fifo_where_the_cache_is_never_blocks(folder: Path) -> None:
    """The cache is read like any file from outside: a FIFO there is not opened (it would block)."""
    cache = catcache.cache_file(folder)
    cache.parent.mkdir(parents=True)
    os.mkfifo(cache)
    calls: list[int] = []
    rules = catcache.load(folder, _sources(folder), _parser(folder, calls))
    assert calls == [1] and len(rules) > 80
    assert cache.is_file()  # written anew in its place
