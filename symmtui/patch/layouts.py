"""The table shapes we know, per released SGLang / vLLM layout, and how to recognise one in a tree."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from msgspec import Struct

from symmtui.patch.capability import KeyKind, TableKey

Role = Literal["sizes", "multimem"]
Package = Literal["sglang", "vllm"]
PACKAGES: tuple[Package, ...] = ("sglang", "vllm")

_SGLANG_DIR = "srt/distributed/device_communicators"
_VLLM_DIR = "distributed/device_communicators"


class TableSpec(Struct, frozen=True):
    """Where one table lives (relative to the package directory) and its name."""

    role: Role
    relpath: str
    name: str


class Layout(Struct, frozen=True):
    """One released arrangement of the two tables.

    ``sizes`` maps capability -> {world size: max bytes}; ``multimem`` maps capability -> world sizes
    that use multimem. ``consumer`` is the file whose code looks the capability up in both (its
    lookup style decides crash vs. silently off).
    """

    id: str
    package: Package
    releases: str
    key_kind: KeyKind
    donor: TableKey
    sizes: TableSpec
    multimem: TableSpec

    @property
    def tables(self) -> tuple[TableSpec, TableSpec]:
        """Both tables, sizes first (the order the code reads them)."""
        return (self.sizes, self.multimem)

    @property
    def consumer(self) -> str:
        """The file that reads both tables by capability."""
        return self.multimem.relpath

    def present_in(self, root: Path) -> bool:
        """Whether both of this layout's files exist under the package directory ``root``."""
        return all((root / t.relpath).is_file() for t in self.tables)


LAYOUTS: tuple[Layout, ...] = (
    Layout(
        id="sglang-torch-symm-mem",
        package="sglang",
        releases="SGLang 0.5.5 and later",
        key_kind="int",
        donor=10,
        sizes=TableSpec("sizes", f"{_SGLANG_DIR}/all_reduce_utils.py", "TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES"),
        multimem=TableSpec("multimem", f"{_SGLANG_DIR}/torch_symm_mem.py", "_WORLD_SIZES_MULTIMEM"),
    ),
    Layout(
        id="sglang-symm-mem",
        package="sglang",
        releases="SGLang 0.5.3 to 0.5.4",
        key_kind="int",
        donor=10,
        sizes=TableSpec("sizes", f"{_SGLANG_DIR}/all_reduce_utils.py", "SYMM_MEM_ALL_REDUCE_MAX_SIZES"),
        multimem=TableSpec("multimem", f"{_SGLANG_DIR}/symm_mem.py", "_WORLD_SIZES_MULTIMEM"),
    ),
    Layout(
        id="vllm-symm-mem",
        package="vllm",
        releases="vLLM with string keys (\"9.0\", \"10.0\", ...)",
        key_kind="str",
        donor="10.0",
        sizes=TableSpec("sizes", f"{_VLLM_DIR}/all_reduce_utils.py", "SYMM_MEM_ALL_REDUCE_MAX_SIZES"),
        multimem=TableSpec("multimem", f"{_VLLM_DIR}/symm_mem.py", "_WORLD_SIZES_MULTIMEM"),
    ),
)


def layouts_for(package: str) -> tuple[Layout, ...]:
    """Known layouts of one package, newest first."""
    return tuple(layout for layout in LAYOUTS if layout.package == package)


def looked_for(package: str) -> str:
    """Human list of the files we look for, for the 'unknown layout' message."""
    parts = [f"{t.relpath} ({t.name})" for layout in layouts_for(package) for t in layout.tables]
    return "; ".join(dict.fromkeys(parts))
