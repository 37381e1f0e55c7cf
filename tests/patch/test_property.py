"""Properties over arbitrarily formatted tables: apply then revert is the identity; the parser holds up."""

from __future__ import annotations

import ast
import os
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symmtui.patch import apply, check, revert
from symmtui.patch.capability import Capability
from symmtui.patch.parser import LayoutProblem, find_table, parse_module, splice_entry, table_values
from tests.patch.formatting import Tables, tables

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

# Each example applies and reverts (16 fsyncs of the patch's safe writes, in the site and in the state dir's
# backups): both on a memory file system when the host has one, where fsync costs nothing; the write path
# is the same (durability is tested elsewhere).
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None

PATHS = {
    "int": ("sglang", "srt/distributed/device_communicators/all_reduce_utils.py",
            "srt/distributed/device_communicators/torch_symm_mem.py"),
    "str": ("vllm", "distributed/device_communicators/all_reduce_utils.py",
            "distributed/device_communicators/symm_mem.py"),
}
SIZES_NAME = {"int": "TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES", "str": "SYMM_MEM_ALL_REDUCE_MAX_SIZES"}


def _write(site: Path, kind: str, t: Tables) -> tuple[Path, Path]:
    pkg, utils_rel, consumer_rel = PATHS[kind]
    utils, consumer = site / pkg / utils_rel, site / pkg / consumer_rel
    utils.parent.mkdir(parents=True)
    utils.write_bytes(t.utils.encode())
    consumer.write_bytes(t.consumer.encode())
    return utils, consumer


@pytest.mark.parametrize("kind", ["int", "str"])
@SETTINGS
@given(data=st.data())
def test_apply_then_revert_is_identity(kind: str, data: st.DataObject) -> None:
    t = data.draw(tables(kind))
    pkg = PATHS[kind][0]
    cap = Capability(12, 0)
    key = cap.key("int" if kind == "int" else "str")
    donor = 10 if kind == "int" else "10.0"
    with tempfile.TemporaryDirectory(prefix="symmtui-prop-", dir=SCRATCH) as tmp, \
            mock.patch.dict(os.environ, {"XDG_STATE_HOME": str(Path(tmp) / "state")}):
        site = Path(tmp) / "site"
        utils, consumer = _write(site, kind, t)
        before = (utils.read_bytes(), consumer.read_bytes())
        report = check(site, pkg, cap)
        assert report.state == "needed"
        result = apply(site, pkg, cap)
        assert result.status == "applied"
        sizes = table_values(ast.parse(utils.read_bytes()), SIZES_NAME[kind])
        multimem = table_values(ast.parse(consumer.read_bytes()), "_WORLD_SIZES_MULTIMEM")
        assert sizes == {**t.sizes, key: t.sizes[donor]}
        assert multimem == {**t.multimem, key: t.multimem[donor]}
        assert check(site, pkg, cap).state == "applied"
        assert revert(site, pkg).status == "reverted"
        assert (utils.read_bytes(), consumer.read_bytes()) == before


@pytest.mark.parametrize("kind", ["int", "str"])
@SETTINGS
@given(data=st.data())
def test_parser_reads_keys_of_any_formatting(kind: str, data: st.DataObject) -> None:
    t = data.draw(tables(kind))
    source = t.utils.encode()
    tree = parse_module(source, "x.py")
    table = find_table(source, tree, SIZES_NAME[kind], "int" if kind == "int" else "str")
    assert list(table.keys) == list(t.sizes)
    new_key: int | str = 12 if kind == "int" else "12.0"
    donor: int | str = 10 if kind == "int" else "10.0"
    out = splice_entry(source, table, new_key, donor)
    compile(out, "x.py", "exec")
    # every original byte survives, in order: the splice only inserts
    it = iter(out)
    assert all(b in it for b in source)
    assert table_values(ast.parse(out), SIZES_NAME[kind]) == {**t.sizes, new_key: t.sizes[donor]}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_parser_never_crashes_on_garbage(blob: bytes) -> None:
    source = b"T = " + blob
    try:
        tree = parse_module(source, "g.py")
        table = find_table(source, tree, "T", "int")
    except LayoutProblem:
        return
    for key in table.keys:
        assert isinstance(key, int)
    if table.get(10) is not None and table.get(12) is None:
        out = splice_entry(source, table, 12, 10)
        compile(out, "g.py", "exec")


GAPS = ["", " ", "  ", "\t", "\n", "\r\n", "\n\n", "  # note\n", "# 12: [1]\n", "\\\n", " \n    "]
VALUES = ["[6, 8]", "[]", "64 * MiB", "{2: 64 * MiB, 4: 32*MiB}", "{\n 2: 1,\n}", "(1, 2)", "None", "'x'", "-1"]


@st.composite
def dict_soup(draw: st.DrawFn) -> tuple[str, list[int]]:
    """A dict literal with random keys, values, commas, comments, blank lines and continuations."""
    keys = draw(st.lists(st.sampled_from([7, 8, 9, 10, 11, 13]), unique=True, max_size=6))
    gap = st.sampled_from(GAPS)
    out = "{" + draw(gap)
    for i, key in enumerate(keys):
        key_src = draw(st.sampled_from([str(key), f"({key})", f"0x{key:x}" if key > 9 else str(key)]))
        out += key_src + draw(gap) + ":" + draw(gap) + draw(st.sampled_from(VALUES))
        if i < len(keys) - 1 or draw(st.booleans()):
            out += draw(gap) + ","
        out += draw(gap)
    return out + "}", keys


@settings(max_examples=500, deadline=None)
@given(dict_soup(), st.sampled_from(["", "MiB = 1 << 20\n", "class C:\n    "]))
def test_parser_fuzz_dict_literals(soup: tuple[str, list[int]], prefix: str) -> None:
    """Randomly formatted dict literals: keys read right, the splice keeps everything and stays valid."""
    text, keys = soup
    source = f"MiB = 1 << 20\n{prefix}T = {text}\n".encode()
    tree = parse_module(source, "f.py")
    table = find_table(source, tree, "T", "int")
    assert list(table.keys) == keys
    if 10 not in keys:
        return
    out = splice_entry(source, table, 12, 10)
    it = iter(out)
    assert all(b in it for b in source)
    again = find_table(out, ast.parse(out), "T", "int")
    assert list(again.keys).count(12) == 1
    new, donor = again.get(12), again.get(10)
    assert new is not None and donor is not None and new.value_dump == donor.value_dump
    assert set(again.keys) == set(keys) | {12}
