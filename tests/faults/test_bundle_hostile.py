"""Hostile bundle files for `report` and `replay`: a gzip bomb, JSON nested thousands deep, concatenated and
cut gzip streams. Each is one line and exit 2, bounded by its cap, never by what the file would expand to."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from pathlib import Path

import pytest

from symmtui.bundle import codec
from symmtui.bundle import format as fmt
from symmtui.bundle.format import SUFFIX, BundleError, read_bundle
from tests.faults.hostile_kit import one_error_line, run_cli


def bomb(expanded_mib: int) -> bytes:
    """A gzip file of a bundle-looking JSON document padded with ``expanded_mib`` MiB of spaces: one
    member per MiB (gzip allows members back to back), each ~1 KiB, so 2 GiB of JSON is ~2 MB."""
    space = gzip.compress(b" " * (1 << 20), compresslevel=9, mtime=0)
    head = gzip.compress(b'{"format": "symmtui-bundle", "version": 1, "pad": "', mtime=0)
    return head + space * expanded_mib + gzip.compress(b'"}', mtime=0)


@pytest.fixture(scope="module")
def bomb_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bomb") / f"bomb{SUFFIX}"
    path.write_bytes(bomb(2000))  # ~2 MB on disk, 2000 MiB of JSON
    return path


@pytest.mark.parametrize("verb", ["report", "replay"])
def test_a_gzip_bomb_is_refused_at_the_cap(bomb_file: Path, verb: str) -> None:
    assert bomb_file.stat().st_size < 3 << 20
    line = one_error_line(run_cli(verb, str(bomb_file), timeout=60))  # the child runs under RLIMIT_AS 2 GiB
    assert f"over {fmt.MAX_JSON_BYTES >> 20} MiB uncompressed" in line and "not read" in line


def test_decompression_memory_is_the_cap_not_the_expansion() -> None:
    """tracemalloc's peak while a 512 MiB bomb is read with a 16 MiB cap: under twice the cap, not 512 MiB
    (gzip.decompress held all of it before it could be compared with the cap)."""
    data = bomb(512)
    cap = 16 << 20
    tracemalloc.start()
    try:
        with pytest.raises(codec.TooLarge):
            codec.gunzip(data, cap)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * cap, peak  # the input, the output's slack and a step besides


def test_gunzip_reads_what_gzip_writes_and_refuses_cut_or_damaged_streams() -> None:
    one, two = gzip.compress(b'{"a": '), gzip.compress(b"[1, 2]}")
    assert codec.gunzip(one + two, 1 << 20) == b'{"a": [1, 2]}'  # members concatenated, as gzip allows
    assert codec.gunzip(one + b"\x00" * 8, 1 << 20) == b'{"a": '
    assert codec.gunzip(gzip.compress(b""), 10) == b""
    with pytest.raises(EOFError):
        codec.gunzip(one[:-9], 1 << 20)
    with pytest.raises(zlib.error):
        codec.gunzip(one[:10] + b"\xff" * 20 + one[30:], 1 << 20)
    with pytest.raises(codec.TooLarge):
        codec.gunzip(gzip.compress(b"x" * 101), 100)
    assert codec.gunzip(gzip.compress(b"x" * 100), 100) == b"x" * 100


@pytest.mark.parametrize("depth", [codec.MAX_JSON_DEPTH + 1, 50_000])
def test_json_nested_too_deep_is_one_line(tmp_path: Path, depth: int) -> None:
    doc = '{"format": "symmtui-bundle", "version": 1, "environment": null, "notices": ' + "[" * depth + "]" * depth + "}"
    path = tmp_path / f"deep{SUFFIX}"
    path.write_bytes(gzip.compress(doc.encode()))
    with pytest.raises(BundleError, match="nested|not a symmtui bundle"):
        read_bundle(path)
    line = one_error_line(run_cli("report", str(path), timeout=60))
    assert "nested" in line or "not a symmtui bundle" in line


def test_check_depth_counts_lists_and_objects_without_recursion() -> None:
    deep: object = []
    for _ in range(100_000):  # far past the interpreter's recursion limit
        deep = [deep]
    with pytest.raises(codec.TooLarge, match="deeper than 48"):
        codec.check_depth(deep)
    ok: object = {"a": [{"b": [1]}]}
    codec.check_depth(ok, limit=4)
    with pytest.raises(codec.TooLarge):
        codec.check_depth(ok, limit=3)
    codec.check_depth("scalar")
    codec.check_depth(json.loads('{"x": 1}'))
