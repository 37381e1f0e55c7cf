"""Source-level work on the tables: find a dict literal by name (ast), read its entries, splice one in."""

from __future__ import annotations

import ast
import bisect
import operator
from collections.abc import Callable, Iterator
from typing import Literal

from msgspec import Struct

from symmtui.patch.capability import KeyKind, TableKey

LookupStyle = Literal["subscript", "get", "guarded", "none", "indirect"]
"""How code reads a table: ``t[cap]`` (KeyError when missing), ``t.get(cap)``, ``cap in t`` first, ..."""


class LayoutProblem(Exception):
    """The source does not have the shape we know; the message says what differed."""


class Entry(Struct, frozen=True):
    """One ``key: value`` of a dict literal, with byte offsets into the file.

    ``key_start..key_end`` and ``value_start..value_end`` are the literal's own text; ``start..end``
    also takes in parentheses around the key and the value (``(10): ([6, 8])``).
    """

    key: TableKey
    start: int
    end: int
    key_start: int
    key_end: int
    value_start: int
    value_end: int
    line: int
    value_dump: str


class DictTable(Struct, frozen=True):
    """A named dict literal found in a module (module level or a class body)."""

    name: str
    line: int
    start: int
    end: int
    kind: KeyKind
    entries: tuple[Entry, ...]
    owner: str | None

    def get(self, key: TableKey) -> Entry | None:
        """The entry with this key, or None."""
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None

    @property
    def keys(self) -> tuple[TableKey, ...]:
        """Keys in source order."""
        return tuple(e.key for e in self.entries)


def parse_module(source: bytes, filename: str) -> ast.Module:
    """Parse a file's bytes; a syntax error becomes a LayoutProblem naming the line."""
    try:
        return ast.parse(source, filename=filename)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" line {line}" if line else ""
        raise LayoutProblem(f"{filename}{where} is not valid Python ({exc.__class__.__name__})") from exc


class SourceOffsets:
    """Maps ast (line, UTF-8 column) positions to byte offsets in the file."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.starts: list[int] = []
        pos = 0
        for line in source.splitlines(keepends=True):
            self.starts.append(pos)
            pos += len(line)
        self.starts.append(pos)

    def offset(self, line: int, col: int) -> int:
        """Byte offset of a 1-based line and a 0-based UTF-8 byte column."""
        return self.starts[line - 1] + col

    def line_of(self, offset: int) -> int:
        """1-based line number that holds ``offset``."""
        return bisect.bisect_right(self.starts, offset)

    def line_bounds(self, offset: int) -> tuple[int, int, int]:
        """(line start, end of its content without the newline, start of the next line)."""
        no = self.line_of(offset)
        start = self.starts[no - 1]
        nxt = self.starts[no] if no < len(self.starts) else len(self.source)
        end = nxt
        while end > start and self.source[end - 1 : end] in (b"\n", b"\r"):
            end -= 1
        return start, end, nxt


def _significant(source: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """(offset, byte) of the punctuation between two ast nodes, skipping blanks, comments, ``\\``-newlines.

    Between the elements of a dict display only ``( ) , : { }``, whitespace and comments can occur,
    so a ``#`` there always starts a comment.
    """
    out: list[tuple[int, int]] = []
    i = start
    while i < end:
        ch = source[i]
        if ch == 0x23:  # '#': skip to the end of the line
            while i < end and source[i] not in (0x0A, 0x0D):
                i += 1
            continue
        if ch not in b" \t\f\r\n\\":
            out.append((i, ch))
        i += 1
    return out


def _outer_start(source: bytes, gap_start: int, inner: int) -> int:
    """Where ``inner``'s opening parentheses begin (after the last ``,`` / ``{`` / ``:`` of the gap)."""
    sig = _significant(source, gap_start, inner)
    opening = inner
    for off, ch in reversed(sig):
        if ch != 0x28:  # '('
            break
        opening = off
    return opening


def _outer_end(source: bytes, inner: int, gap_end: int) -> int:
    """Just after the closing parentheses that follow ``inner`` (before the next ``,`` / ``:`` / ``}``)."""
    end = inner
    for off, ch in _significant(source, inner, gap_end):
        if ch != 0x29:  # ')'
            break
        end = off + 1
    return end


def _assignments(tree: ast.Module, name: str) -> Iterator[tuple[ast.expr | None, int, str | None]]:
    """(value, line, owning class) of every ``name = ...`` at module level or in a top-level class body."""
    scopes: list[tuple[list[ast.stmt], str | None]] = [(tree.body, None)]
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            scopes.append((node.body, node.name))
    for body, owner in scopes:
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                    yield stmt.value, stmt.lineno, owner
            elif isinstance(stmt, ast.AnnAssign):
                if isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                    yield stmt.value, stmt.lineno, owner


def find_table(source: bytes, tree: ast.Module, name: str, kind: KeyKind) -> DictTable:
    """The one dict literal assigned to ``name``; anything else is a LayoutProblem saying what was found."""
    found = list(_assignments(tree, name))
    if not found:
        raise LayoutProblem(f"no assignment to {name}")
    if len(found) > 1:
        lines = ", ".join(str(line) for _, line, _ in found)
        raise LayoutProblem(f"{name} is assigned more than once (lines {lines})")
    value, line, owner = found[0]
    if not isinstance(value, ast.Dict):
        what = type(value).__name__ if value is not None else "nothing"
        raise LayoutProblem(f"{name} (line {line}) is not a dict literal (it is {what})")
    index = SourceOffsets(source)
    assert value.end_lineno is not None and value.end_col_offset is not None
    dict_start = index.offset(value.lineno, value.col_offset)
    dict_end = index.offset(value.end_lineno, value.end_col_offset)
    spans: list[tuple[TableKey, int, int, int, int, int, str]] = []
    seen: set[TableKey] = set()
    for key_node, value_node in zip(value.keys, value.values, strict=True):
        if key_node is None:
            raise LayoutProblem(f"{name} (line {line}) unpacks another dict (**...)")
        if not isinstance(key_node, ast.Constant) or isinstance(key_node.value, bool):
            raise LayoutProblem(f"{name} line {key_node.lineno}: a key is not a literal number or string")
        key = key_node.value
        if kind == "int" and not isinstance(key, int):
            raise LayoutProblem(f"{name} line {key_node.lineno}: key {key!r} is not an integer")
        if kind == "str" and not isinstance(key, str):
            raise LayoutProblem(f"{name} line {key_node.lineno}: key {key!r} is not a string like \"10.0\"")
        assert isinstance(key, int | str)
        if key in seen:
            raise LayoutProblem(f"{name} line {key_node.lineno}: key {key!r} appears twice")
        seen.add(key)
        end_line, end_col = value_node.end_lineno, value_node.end_col_offset
        kend_line, kend_col = key_node.end_lineno, key_node.end_col_offset
        assert end_line is not None and end_col is not None and kend_line is not None and kend_col is not None
        spans.append(
            (
                key,
                index.offset(key_node.lineno, key_node.col_offset),
                index.offset(kend_line, kend_col),
                index.offset(value_node.lineno, value_node.col_offset),
                index.offset(end_line, end_col),
                key_node.lineno,
                ast.dump(value_node),
            )
        )
    entries: list[Entry] = []
    prev_end = dict_start + 1
    for i, (key, k0, k1, v0, v1, key_line, dump) in enumerate(spans):
        next_start = spans[i + 1][1] if i + 1 < len(spans) else dict_end - 1
        start = _outer_start(source, prev_end, k0)
        end = _outer_end(source, v1, next_start)
        entries.append(Entry(key, start, end, k0, k1, v0, v1, key_line, dump))
        prev_end = end
    assert value.end_lineno is not None and value.end_col_offset is not None
    return DictTable(
        name=name,
        line=line,
        start=dict_start,
        end=dict_end,
        kind=kind,
        entries=tuple(entries),
        owner=owner,
    )


_MUTATORS = frozenset({"update", "pop", "popitem", "clear", "setdefault", "__setitem__", "__delitem__",
                       "__ior__"})


def _names_table(node: ast.AST, name: str) -> bool:
    """``name`` itself, or ``something.name`` (the table read through its module or class)."""
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)


def mutations(tree: ast.Module, name: str, literal_line: int) -> list[int]:
    """Lines that change the table ``name`` after its literal (anywhere in the file, functions included):
    ``del T[k]``, ``T[k] = v``, ``T |= ...``, ``T.update/pop/clear/...(...)``, another ``T = ...``.

    What such a file holds at run time cannot be told from the literal, so the patcher must not
    judge it from the literal alone.
    """
    lines: list[int] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.Assign):
            targets = [t for t in node.targets if not isinstance(t, ast.Name) or node.lineno != literal_line]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target] if node.lineno != literal_line else []
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            targets = [node.func.value]
        if any(_names_table(t.value if isinstance(t, ast.Subscript) else t, name) for t in targets):
            lines.append(getattr(node, "lineno", 0))
    return sorted(set(lines))


def key_literal(key: TableKey, like: bytes) -> bytes:
    """Source text for ``key``, quoted the way the donor's key is (``"12.0"`` or ``'12.0'``)."""
    if isinstance(key, int):
        return str(key).encode()
    quote = b"'" if like.lstrip(b"rRuUbB").startswith(b"'") else b'"'
    return quote + key.encode() + quote


def _sort_key(key: TableKey) -> tuple[float, ...]:
    if isinstance(key, int):
        return (float(key),)
    parts: list[float] = []
    for part in key.split("."):
        try:
            parts.append(float(part))
        except ValueError:
            return (float("inf"),)
    return tuple(parts)


def anchor_for(table: DictTable, new_key: TableKey, donor: TableKey) -> Entry:
    """The entry to insert after: the last one with a lower key (keeps sorted tables sorted), else the donor."""
    donor_entry = table.get(donor)
    assert donor_entry is not None
    lower = [e for e in table.entries if _sort_key(e.key) < _sort_key(new_key)]
    if not lower:
        return donor_entry
    return max(lower, key=lambda e: _sort_key(e.key))


def new_entry_text(source: bytes, donor: Entry, new_key: TableKey) -> bytes:
    """The donor's ``key: value`` source copied verbatim, only the key changed."""
    key_src = source[donor.key_start : donor.key_end]
    return (
        source[donor.start : donor.key_start]
        + key_literal(new_key, key_src)
        + source[donor.key_end : donor.end]
    )


def splice_entry(source: bytes, table: DictTable, new_key: TableKey, donor: TableKey) -> bytes:
    """``source`` with ``new_key`` added to ``table`` as a copy of the donor entry, formatting kept.

    One entry per line (the released style): a new line after the anchor entry's line, same indent,
    with a trailing comma when the anchor has one. Entries sharing a line: `` new: value,`` right
    after the anchor. Comments stay where they were.
    """
    donor_entry = table.get(donor)
    if donor_entry is None:
        raise LayoutProblem(f"{table.name} has no donor key {donor!r}")
    entry = new_entry_text(source, donor_entry, new_key)
    anchor = anchor_for(table, new_key, donor)
    index = SourceOffsets(source)
    line_start, line_end, next_line = index.line_bounds(anchor.end)
    rest = source[anchor.end : line_end]
    stripped = rest.lstrip(b" \t")
    has_comma = stripped.startswith(b",")
    after = stripped[1:].lstrip(b" \t") if has_comma else stripped
    key_line_start, _, _ = index.line_bounds(anchor.start)
    indent = source[key_line_start : anchor.start]
    is_last = anchor is table.entries[-1]
    own_lines = (
        (after == b"" or after.startswith(b"#"))
        and indent.strip(b" \t") == b""
        and (has_comma or is_last)
        and next_line > line_end
    )
    if own_lines:
        newline = source[line_end:next_line]
        text = indent + entry + (b"," if has_comma else b"") + newline
        out = source[:next_line] + text + source[next_line:]
        if not has_comma:
            out = out[: anchor.end] + b"," + out[anchor.end :]
        return out
    if has_comma:
        comma_at = anchor.end + (len(rest) - len(stripped)) + 1
        return source[:comma_at] + b" " + entry + b"," + source[comma_at:]
    return source[: anchor.end] + b", " + entry + source[anchor.end :]


def strip_key(tree: ast.Module, name: str, key: TableKey) -> str:
    """ast.dump of ``tree`` with ``key`` removed from table ``name`` (to prove nothing else changed)."""
    for value, _line, _owner in _assignments(tree, name):
        if isinstance(value, ast.Dict):
            pairs = [
                (k, v)
                for k, v in zip(value.keys, value.values, strict=True)
                if not (isinstance(k, ast.Constant) and k.value == key and type(k.value) is type(key))
            ]
            value.keys = [k for k, _ in pairs]
            value.values = [v for _, v in pairs]
    return ast.dump(tree)


# --- how the code reads the tables -------------------------------------------------------------


def lookup_style(tree: ast.Module, name: str) -> LookupStyle:
    """How this module reads table ``name`` by capability.

    ``subscript``: ``T[cap]`` with no membership test on ``T`` (KeyError when the key is missing);
    ``get``: only ``T.get(...)``; ``guarded``: ``cap in T`` / ``not in T`` before indexing;
    ``none``: not read here; ``indirect``: passed around some other way (can't tell).
    """
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    subscript = get = guarded = indirect = False
    for node in ast.walk(tree):
        is_ref = (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)) or (
            isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load)
        )
        if not is_ref:
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Subscript) and parent.value is node:
            subscript = True
        elif isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "get":
            get = True
        elif isinstance(parent, ast.Compare) and any(
            comp is node and isinstance(op, ast.In | ast.NotIn)
            for op, comp in zip(parent.ops, parent.comparators, strict=True)
        ):
            guarded = True
        else:
            indirect = True
    if subscript and not guarded:
        return "subscript"
    if subscript and guarded:
        return "guarded"
    if get or guarded:
        return "get" if get and not guarded else "guarded"
    if indirect:
        return "indirect"
    return "none"


# --- a small evaluator for the literals (they hold expressions like ``64 * MiB``) -------------

_BINOPS: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.LShift: operator.lshift,
    ast.Pow: operator.pow,
}


class Unevaluable(Exception):
    """The expression uses something the safe evaluator does not resolve."""


def safe_eval(node: ast.AST, env: dict[str, object]) -> object:
    """Evaluate literals, names bound earlier to literals, and + - * / // % << ** on numbers. No calls."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise Unevaluable(f"name {node.id} is not a simple constant")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        val = safe_eval(node.operand, env)
        if not isinstance(val, int | float):
            raise Unevaluable("unary operator on a non-number")
        return -val if isinstance(node.op, ast.USub) else val
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = safe_eval(node.left, env), safe_eval(node.right, env)
        if not (isinstance(left, int | float) and isinstance(right, int | float)):
            raise Unevaluable("arithmetic on a non-number")
        if isinstance(node.op, ast.Pow | ast.LShift) and abs(right) > 64:
            raise Unevaluable("exponent too large")
        try:
            return _BINOPS[type(node.op)](left, right)
        except ArithmeticError as exc:
            raise Unevaluable(str(exc)) from exc
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [safe_eval(e, env) for e in node.elts]
        if isinstance(node, ast.List):
            return items
        if isinstance(node, ast.Tuple):
            return tuple(items)
        try:
            return frozenset(items)
        except TypeError as exc:
            raise Unevaluable("unhashable set item") from exc
    if isinstance(node, ast.Dict):
        out: dict[object, object] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise Unevaluable("dict unpacking")
            key = safe_eval(k, env)
            try:
                out[key] = safe_eval(v, env)
            except TypeError as exc:
                raise Unevaluable("unhashable key") from exc
        return out
    raise Unevaluable(f"{type(node).__name__} is not evaluated")


def module_constants(tree: ast.Module) -> dict[str, object]:
    """Module-level ``NAME = <evaluable expr>`` bindings (``MiB = 1024 * 1024``), in order."""
    env: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                env[stmt.targets[0].id] = safe_eval(stmt.value, env)
            except Unevaluable:
                env.pop(stmt.targets[0].id, None)
    return env


def table_values(tree: ast.Module, name: str) -> dict[object, object] | None:
    """The table evaluated with the module's constants, or None when something can't be resolved."""
    env = module_constants(tree)
    for value, _line, _owner in _assignments(tree, name):
        if isinstance(value, ast.Dict):
            try:
                result = safe_eval(value, env)
            except Unevaluable:
                return None
            return result if isinstance(result, dict) else None
    return None
