"""The Hyperscan database cache: a start loads what an earlier one compiled, and finds the same; a broken or
foreign file, or a cache directory it cannot use, means compiling again."""

from __future__ import annotations

from pathlib import Path

import pytest

from symmtui.judge import hscache
from symmtui.judge.litmask import LiteralMask

hyperscan = pytest.importorskip("hyperscan", reason="no hyperscan wheel here: pip install hyperscan")

LITERALS = ["CUDA error", "out of memory", "Traceback", "KeyError: 12"]
LINES = ["RuntimeError: CUDA error: an illegal memory access", "ok", "Traceback (most recent call last):",
         "torch.OutOfMemoryError: CUDA out of memory. KeyError: 12"]


def masks() -> list[int]:
    mask = LiteralMask(hyperscan, LITERALS, [1 << i for i in range(len(LITERALS))])
    return [mask.mask(line) for line in LINES]


def cached(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "symmtui").glob("hyperscan-*.db"))


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_a_second_start_loads_the_database_and_finds_the_same(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    first = masks()
    assert first == [0b0001, 0, 0b0100, 0b1010]
    [file] = cached(tmp_path)
    compiled: list[int] = []
    real = hyperscan.Database

    def counting(*args: object, **kwargs: object) -> object:
        compiled.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hyperscan, "Database", counting)
    assert masks() == first
    assert compiled == [], "the second start compiled instead of loading the cache"
    assert cached(tmp_path) == [file]


@pytest.mark.parametrize("content", [b"", b"not a database", b"\x00" * 4096])
def test_a_broken_file_is_compiled_again_and_replaced(tmp_path: Path, content: bytes) -> None:
    first = masks()
    [file] = cached(tmp_path)
    file.write_bytes(content)
    assert masks() == first
    assert file.read_bytes() != content


def test_another_recipe_is_another_file(tmp_path: Path) -> None:
    masks()
    LiteralMask(hyperscan, LITERALS[:2], [1, 2])
    assert len(cached(tmp_path)) == 2


def test_an_unusable_cache_directory_still_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "afile"))
    assert masks() == [0b0001, 0, 0b0100, 0b1010]


def test_the_cache_is_keyed_by_the_flags_too(tmp_path: Path) -> None:
    pats = [b"abc"]
    multi = hscache.database(hyperscan, pats, 0)
    single = hscache.database(hyperscan, pats, [hyperscan.HS_FLAG_SINGLEMATCH])
    hits: dict[str, int] = {"multi": 0, "single": 0}
    for name, db in (("multi", multi), ("single", single)):
        def on(_i: int, _s: int, _e: int, _f: int, _c: object, name: str = name) -> None:
            hits[name] += 1
        db.scan(b"abc abc abc", match_event_handler=on)
    assert hits == {"multi": 3, "single": 1}
    assert len(cached(tmp_path)) == 2
