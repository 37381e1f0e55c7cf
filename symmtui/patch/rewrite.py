"""Writing the patch: splice and verify the new entries, the unified diff, and the all-or-nothing replace."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from pathlib import Path

from symmtui import boundary
from symmtui.errors import InputError
from symmtui.patch import atomic
from symmtui.patch.capability import TableKey
from symmtui.patch.errors import PatchError, Refused
from symmtui.patch.layouts import Layout, TableSpec
from symmtui.patch.parser import (
    LayoutProblem,
    find_table,
    parse_module,
    splice_entry,
    strip_key,
    table_values,
)
from symmtui.patch.scan import MAX_SOURCE_BYTES, Scan
from symmtui.patch.state import sha256


def patched(scan: Scan, key: TableKey) -> dict[Path, bytes]:
    """New bytes for each file, each table spliced and verified."""
    out = dict(scan.data)
    layout = scan.layout
    for spec in layout.tables:
        p = scan.path(spec)
        before = out[p]
        tree = parse_module(before, str(p))
        table = find_table(before, tree, spec.name, layout.key_kind)
        after = splice_entry(before, table, key, layout.donor)
        _verify(before, after, spec, layout, key, p)
        out[p] = after
    return {p: b for p, b in out.items() if b != scan.data[p]}


def _verify(before: bytes, after: bytes, spec: TableSpec, layout: Layout, key: TableKey, path: Path) -> None:
    """Re-parse and compare: the new key equals the donor, nothing else changed, it compiles.

    Equality is checked on the ast (the new value's tree equals the donor's: same expressions, e.g.
    ``64 * MiB``), on the whole module (with the new key taken out it equals the original), and,
    where the safe evaluator can resolve the literal, on the values too.
    """

    def fail(why: str) -> Refused:
        return Refused(
            f"the patched {path.name} failed verification ({why}); nothing was changed",
            reason="verify-failed",
        )

    try:
        compile(after, str(path), "exec", dont_inherit=True)
        tree_after = ast.parse(after)
        table = find_table(after, tree_after, spec.name, layout.key_kind)
    except (SyntaxError, ValueError, LayoutProblem) as exc:
        raise fail(str(exc)) from exc
    new, donor = table.get(key), table.get(layout.donor)
    if new is None or donor is None or new.value_dump != donor.value_dump:
        raise fail("the new entry does not equal the donor entry")
    new_vals = table_values(tree_after, spec.name)  # before strip_key, which edits the tree it is given
    tree_before = ast.parse(before)
    if strip_key(tree_after, spec.name, key) != ast.dump(tree_before):
        raise fail("something besides the new entry changed")
    old_vals = table_values(tree_before, spec.name)
    if old_vals is not None and (new_vals is None or new_vals != {**old_vals, key: old_vals[layout.donor]}):
        raise fail("the evaluated table is not the original plus a copy of the donor")


def unified(scan: Scan, new: dict[Path, bytes]) -> str:
    """The unified diff from the scanned bytes to ``new``, paths relative to the package's parent."""
    chunks: list[str] = []
    base = scan.inst.root.parent
    for p in sorted(new):
        rel = p.relative_to(base)
        real = scan.real.get(p, p)
        if real != p:  # before the ---/+++ lines: patch(1) and git apply skip such text
            chunks.append(f"# {rel} is a symlink: the file this changes is {real}\n")
        chunks.extend(
            difflib.unified_diff(
                scan.data[p].decode("utf-8", "surrogateescape").splitlines(keepends=True),
                new[p].decode("utf-8", "surrogateescape").splitlines(keepends=True),
                fromfile=f"a/{rel}",
                tofile=f"b/{rel}",
            )
        )
    return "".join(chunks)


def replace_all(
    new: dict[Path, bytes], expected_old: dict[Path, bytes], reals: Mapping[Path, Path] | None = None
) -> None:
    """Stage every file, re-check the originals are unchanged, then rename; undo on failure.

    A path is written through a symlink only to the real file ``reals`` allows for it (what the user
    was shown and confirmed); anything else resolving elsewhere (a link planted meanwhile) is refused.
    """
    staged: list[atomic.Staged] = []
    try:
        for p, data in sorted(new.items()):
            staged.append(atomic.stage(p, data))
    except OSError as exc:
        for s in staged:
            s.discard()
        raise Refused(
            f"could not write next to {exc.filename or 'the target'} ({exc.strerror}); nothing was changed",
            reason="write-failed",
        ) from exc
    except BaseException:
        for s in staged:
            s.discard()
        raise
    for s in staged:
        allowed = (reals or {}).get(s.target, s.target)
        if s.real != allowed:
            for t in staged:
                t.discard()
            raise Refused(
                f"{s.target} resolves to {s.real}, not the file that was checked ({allowed}): "
                "nothing was changed: check again",
                reason="changed",
            )
        try:
            current = boundary.read_bytes(s.target, what="the table file", max_bytes=MAX_SOURCE_BYTES)
        except InputError:
            current = b""
        if sha256(current) != sha256(expected_old[s.target]):
            for t in staged:
                t.discard()
            raise Refused(
                f"{s.target} changed while the patch was being prepared; nothing was changed: check again",
                reason="changed",
            )
    done: list[atomic.Staged] = []
    try:
        for s in staged:
            atomic.commit(s)
            done.append(s)
    except OSError as exc:
        for s in staged:
            if s not in done:
                s.discard()
        stuck: list[str] = []
        for s in done:
            try:
                atomic.write_atomic(s.target, expected_old[s.target])
            except OSError as undo_exc:
                stuck.append(f"{s.target} ({undo_exc.strerror})")
        if stuck:  # the caller keeps the saved originals: they are the only copy now
            raise PatchError(
                f"could not replace {exc.filename or 'a file'} ({exc.strerror}) and could not put back "
                f"{', '.join(stuck)}: the originals are kept in symmtui's state directory; "
                "run symmtui patch revert --force once the cause is fixed",
                reason="partial",
            ) from exc
        raise Refused(
            f"could not replace {exc.filename or 'a file'} ({exc.strerror}); the originals were put back",
            reason="write-failed",
        ) from exc
