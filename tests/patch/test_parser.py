"""The ast layer: finding tables, reading lookups, evaluating literals, splicing entries; capabilities."""

from __future__ import annotations

import ast

import pytest

from symmtui.errors import UserError
from symmtui.patch.capability import Capability, key_text
from symmtui.patch.parser import (
    LayoutProblem,
    Unevaluable,
    find_table,
    lookup_style,
    module_constants,
    parse_module,
    safe_eval,
    splice_entry,
)


def _table(src: str, name: str = "T", kind: str = "int"):  # type: ignore[no-untyped-def]
    data = src.encode()
    return data, find_table(data, parse_module(data, "t.py"), name, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "cap", "int_key", "str_key"),
    [("12", Capability(12, None), 12, "12.0"), ("12.0", Capability(12, 0), 12, "12.0"),
     ("12.1", Capability(12, 1), 12, "12.1"), ("sm120", Capability(12, 0), 12, "12.0"),
     (" 9.0 ", Capability(9, 0), 9, "9.0"), ("SM_100", Capability(10, 0), 10, "10.0")],
)
def test_capability_forms(text: str, cap: Capability, int_key: int, str_key: str) -> None:
    parsed = Capability.parse(text)
    assert parsed == cap
    assert parsed.key("int") == int_key and parsed.key("str") == str_key


@pytest.mark.parametrize("bad", ["", "twelve", "12.", "12.0.1", "0", "-12", "1234"])
def test_capability_rejects_with_a_hint(bad: str) -> None:
    with pytest.raises(UserError) as info:
        Capability.parse(bad)
    assert "--capability 12" in str(info.value) or "1..99" in str(info.value)
    assert info.value.exit_code == 2


def test_capability_of_accepts_what_callers_hold() -> None:
    assert Capability.of((12, 0)) == Capability(12, 0)
    assert Capability.of(12) == Capability(12, None)
    assert Capability.of("12.0") == Capability(12, 0)
    assert str(Capability(12, 0)) == "12.0" and str(Capability(12)) == "12"
    assert key_text("12.0") == '"12.0"' and key_text(12) == "12"


def test_find_table_in_class_body_and_annotated() -> None:
    src = "class C:\n    X: dict[int, list[int]] = {9: [4], 10: [6, 8]}\n"
    _, table = _table(src, "X")
    assert table.keys == (9, 10) and table.owner == "C"


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("T = dict(a=1)\n", "not a dict literal"),
        ("T = {**BASE, 10: 1}\n", "unpacks another dict"),
        ("T = {10: 1, 10: 2}\n", "appears twice"),
        ("T = {10: 1}\nT = {9: 1}\n", "assigned more than once"),
        ("T = {'10.0': 1}\n", "not an integer"),
        ("T = {K: 1}\n", "not a literal"),
        ("U = {10: 1}\n", "no assignment to T"),
        ("T = {True: 1}\n", "not a literal"),
    ],
)
def test_layout_problems_say_what_differs(src: str, message: str) -> None:
    with pytest.raises(LayoutProblem) as info:
        _table(src)
    assert message in str(info.value)


def test_syntax_error_is_a_layout_problem() -> None:
    with pytest.raises(LayoutProblem) as info:
        parse_module(b"T = {10: [6, 8]\n", "broken.py")
    assert "broken.py" in str(info.value) and "not valid Python" in str(info.value)


def test_string_keys_must_be_strings() -> None:
    with pytest.raises(LayoutProblem):
        _table("T = {10: 1}\n", kind="str")


@pytest.mark.parametrize(
    ("code", "style"),
    [
        ("x = T[cap]\n", "subscript"),
        ("if n not in T[cap]:\n    pass\n", "subscript"),
        ("x = T.get(cap)\n", "get"),
        ("x = T.get(cap, ())\ny = T.get(c)\n", "get"),
        ("if cap not in T:\n    pass\nx = T[cap]\n", "guarded"),
        ("x = self.T[self.cap]\n", "subscript"),
        ("x = self.T.get(self.cap, ())\n", "get"),
        ("from m import (\n    T,\n)\n", "none"),
        ("f(T)\n", "indirect"),
    ],
)
def test_lookup_style(code: str, style: str) -> None:
    assert lookup_style(ast.parse(code), "T") == style


def test_safe_eval_resolves_constants_and_refuses_calls() -> None:
    tree = ast.parse("KiB = 1024\nMiB = KiB * KiB\nX = load()\n")
    env = module_constants(tree)
    assert env == {"KiB": 1024, "MiB": 1024 * 1024}
    expr = ast.parse("{2: 64 * MiB, 4: MiB // 2, 6: -(1 << 3), 8: [1, (2, 3)]}", mode="eval").body
    assert safe_eval(expr, env) == {2: 64 * 1024 * 1024, 4: 512 * 1024, 6: -8, 8: [1, (2, 3)]}
    for bad in ("open('x')", "X * 2", "2 ** 1000", "1 // 0", "[].append"):
        with pytest.raises(Unevaluable):
            safe_eval(ast.parse(bad, mode="eval").body, env)


def test_splice_one_per_line_keeps_comments_and_trailing_comma() -> None:
    src, table = _table("T = {\n    9: [4, 6, 8],  # H\n    10: [6, 8],  # B\n}  # end\n")
    assert splice_entry(src, table, 12, 10) == b"T = {\n    9: [4, 6, 8],  # H\n    10: [6, 8],  # B\n    12: [6, 8],\n}  # end\n"


def test_splice_without_trailing_comma_adds_one_only_where_needed() -> None:
    src, table = _table("T = {\n    9: [4],\n    10: [6, 8]  # last\n}\n")
    assert splice_entry(src, table, 12, 10) == b"T = {\n    9: [4],\n    10: [6, 8],  # last\n    12: [6, 8]\n}\n"


def test_splice_inline() -> None:
    src, table = _table("T = {9: [4], 10: [6, 8]}\n")
    assert splice_entry(src, table, 12, 10) == b"T = {9: [4], 10: [6, 8], 12: [6, 8]}\n"
    src, table = _table("T = {10: [6, 8], 9: [4],}\n")
    assert splice_entry(src, table, 12, 10) == b"T = {10: [6, 8], 12: [6, 8], 9: [4],}\n"


def test_splice_crlf_and_parentheses() -> None:
    src, table = _table("T = {\r\n    (10): ([6, 8]),\r\n}\r\n")
    assert splice_entry(src, table, 12, 10) == b"T = {\r\n    (10): ([6, 8]),\r\n    (12): ([6, 8]),\r\n}\r\n"


def test_splice_keeps_the_donor_quote_style() -> None:
    src, table = _table("T = {\n    '9.0': [4],\n    '10.0': [6, 8],\n}\n", kind="str")
    out = splice_entry(src, table, "12.0", "10.0")
    assert b"    '12.0': [6, 8],\n" in out


def test_splice_after_largest_lower_key_in_unsorted_table() -> None:
    src, table = _table("T = {\n    10: [6],\n    13: [1],\n    11: [2],\n}\n")
    assert splice_entry(src, table, 12, 10) == b"T = {\n    10: [6],\n    13: [1],\n    11: [2],\n    12: [6],\n}\n"


def test_splice_multiline_donor_in_non_ascii_file() -> None:
    src, table = _table("# é ü — non-ASCII comment\nT = {\n    10: {  # «donor»\n        2: 1,\n    },\n}\n")
    out = splice_entry(src, table, 12, 10)
    assert out.endswith("    12: {  # «donor»\n        2: 1,\n    },\n}\n".encode())
