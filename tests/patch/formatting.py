"""Hypothesis strategies: the two tables written with arbitrary (valid) formatting, plus what they hold."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

MIB = 1024 * 1024


@dataclass(frozen=True)
class Style:
    """How one dict literal is laid out."""

    one_per_line: bool
    indent: str
    colon: str
    comma_space: str
    trailing_comma: bool
    blank_lines: tuple[bool, ...]
    comments: tuple[str | None, ...]
    own_line_comments: tuple[str | None, ...]
    open_comment: str | None
    quote: str
    newline: str
    inner_multiline: bool
    value_forms: tuple[int, ...]


comment_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20
).map(lambda s: "# " + s.replace("\r", "").replace("\n", ""))


def _size_expr(value: int, form: int) -> str:
    """One number written one of several ways (all evaluate to ``value``)."""
    if value % MIB == 0:
        n = value // MIB
        return [f"{n} * MiB", f"{n}*MiB", f"({n} * MiB)", str(value), f"MiB * {n}"][form % 5]
    return str(value)


@st.composite
def styles(draw: st.DrawFn, n: int) -> Style:
    """A random layout for a table with ``n`` entries."""
    return Style(
        one_per_line=draw(st.booleans()),
        indent=draw(st.sampled_from(["    ", "  ", "\t", "        "])),
        colon=draw(st.sampled_from([": ", ":", " : ", ":  "])),
        comma_space=draw(st.sampled_from([" ", "", "  "])),
        trailing_comma=draw(st.booleans()),
        blank_lines=tuple(draw(st.lists(st.booleans(), min_size=n, max_size=n))),
        comments=tuple(draw(st.lists(st.one_of(st.none(), comment_text), min_size=n, max_size=n))),
        own_line_comments=tuple(draw(st.lists(st.one_of(st.none(), comment_text), min_size=n, max_size=n))),
        open_comment=draw(st.one_of(st.none(), comment_text)),
        quote=draw(st.sampled_from(['"', "'"])),
        newline=draw(st.sampled_from(["\n", "\n", "\r\n"])),
        inner_multiline=draw(st.booleans()),
        value_forms=tuple(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))),
    )


def render(entries: list[tuple[str, str]], style: Style, base: str) -> str:
    """A dict literal of ``(key source, value source)`` pairs, the first line unindented."""
    nl = style.newline
    if not entries:
        return "{}"
    if style.one_per_line:
        inner = base + style.indent
        out = "{" + (f"  {style.open_comment}" if style.open_comment else "") + nl
        for i, (k, v) in enumerate(entries):
            if style.blank_lines[i] and i:
                out += nl
            if style.own_line_comments[i]:
                out += f"{inner}{style.own_line_comments[i]}{nl}"
            last = i == len(entries) - 1
            comma = "," if (not last or style.trailing_comma) else ""
            v = v.replace("\n", nl + inner)
            out += f"{inner}{k}{style.colon}{v}{comma}"
            out += (f"  {style.comments[i]}" if style.comments[i] else "") + nl
        return out + base + "}"
    sep = "," + style.comma_space
    body = sep.join(f"{k}{style.colon}{v}" for k, v in entries)
    return "{" + body + ("," if style.trailing_comma else "") + "}"


def _key_src(key: int | str, quote: str) -> str:
    return str(key) if isinstance(key, int) else f"{quote}{key}{quote}"


def sizes_value(sizes: dict[int, int], style: Style, forms: int) -> str:
    """The inner ``{world size: bytes}`` dict."""
    items = [(str(ws), _size_expr(v, forms + i)) for i, (ws, v) in enumerate(sizes.items())]
    if style.inner_multiline:
        return "{\n" + "".join(f"    {k}: {v},\n" for k, v in items) + "}"
    return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"


@dataclass(frozen=True)
class Tables:
    """Two generated files and the tables they hold."""

    utils: str
    consumer: str
    sizes: dict[int | str, dict[int, int]]
    multimem: dict[int | str, list[int]]


world_sizes = st.dictionaries(
    st.sampled_from([2, 4, 6, 8]), st.sampled_from([8 * MIB, 32 * MIB, 64 * MIB, 128 * MIB, 1000]), min_size=1
)


@st.composite
def tables(draw: st.DrawFn, kind: str) -> Tables:
    """Both tables for a layout of ``kind`` ("int": SGLang, "str": vLLM), donor present, target absent."""
    if kind == "int":
        extra = draw(st.lists(st.sampled_from([7, 8, 9, 11, 13]), unique=True))
        donor: int | str = 10
    else:
        extra = draw(st.lists(st.sampled_from(["8.9", "9.0", "10.3", "10.7", "11.0", "12.1"]), unique=True))
        donor = "10.0"
    keys: list[int | str] = draw(st.permutations([donor, *extra]))
    sizes = {k: draw(world_sizes) for k in keys}
    multimem = {k: draw(st.lists(st.sampled_from([2, 4, 6, 8]), max_size=4)) for k in keys}
    s1 = draw(styles(len(keys)))
    s2 = draw(styles(len(keys)))
    size_entries = [(_key_src(k, s1.quote), sizes_value(v, s1, s1.value_forms[i])) for i, (k, v) in enumerate(sizes.items())]
    mm_entries = [(_key_src(k, s2.quote), repr(v)) for k, v in multimem.items()]
    name = "TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES" if kind == "int" else "SYMM_MEM_ALL_REDUCE_MAX_SIZES"
    nl1, nl2 = s1.newline, s2.newline
    utils = nl1.join(
        ['"""generated"""', "", "MiB = 1024 * 1024", "", f"{name} = " + render(size_entries, s1, ""), ""]
    )
    consumer = nl2.join(
        [
            '"""generated"""',
            "",
            "",
            "class Communicator:",
            "    _WORLD_SIZES_MULTIMEM = " + render(mm_entries, s2, "    "),
            "",
            "    def sizes(self, cap):",
            f"        return {name}[cap]",
            "",
        ]
    )
    return Tables(utils=utils, consumer=consumer, sizes=dict(sizes), multimem=dict(multimem))
