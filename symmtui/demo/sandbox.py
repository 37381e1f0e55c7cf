"""A sandbox install for the demo: a tiny fake ``sglang`` tree whose tables lack capability 12."""

from __future__ import annotations

import tempfile
from pathlib import Path

from msgspec import Struct

from symmtui.patch.capability import Capability
from symmtui.patch.layouts import layouts_for
from symmtui.patch.parser import LayoutProblem, find_table, parse_module

DEFAULT_VERSION = "0.5.8"

_PKG_INIT = '''"""Stand-in for the sglang package, written by symmtui's demo (it is never imported)."""
'''

_VERSION_PY = '''"""Version of this stand-in package."""

__version__ = "{version}"
'''

# The two tables in the shape SGLang 0.5.5 to 0.5.13 ship them (the numbers are the released ones; the
# prose is ours). The demo's simulated server reads them with symmtui's parser to decide whether to
# crash with KeyError: 12, exactly as the real release would.
_ALL_REDUCE_UTILS = '''"""Largest all-reduce payload per GPU generation and world size (demo stand-in)."""

MiB = 1024 * 1024

# capability major -> {tensor-parallel world size: bytes}
TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES = {
    9: {
        2: 64 * MiB,  # Hopper, two ranks
        4: 64 * MiB,
        6: 128 * MiB,
        8: 128 * MiB,
    },
    10: {
        2: 64 * MiB,  # Blackwell datacenter
        4: 64 * MiB,
        6: 128 * MiB,
        8: 128 * MiB,
    },
}
'''

_TORCH_SYMM_MEM = '''"""Symmetric-memory all-reduce communicator (demo stand-in: same lookups, no torch)."""

from sglang.srt.distributed.device_communicators.all_reduce_utils import (
    TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES,
)


class TorchSymmMemCommunicator:
    """Picks the all-reduce kernel from the GPU generation; the lookups are the ones that fail."""

    # capability major -> world sizes that use the multimem kernel
    _WORLD_SIZES_MULTIMEM = {
        9: [4, 6, 8],
        10: [6, 8],
    }

    def __init__(self, world_size, device_capability):
        self.world_size = world_size
        self.device_capability = device_capability
        sizes = TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]
        self.max_size = sizes[self.world_size]

    def uses_multimem(self):
        return self.world_size in self._WORLD_SIZES_MULTIMEM[self.device_capability]
'''

_METADATA = """Metadata-Version: 2.1
Name: sglang
Version: {version}
Summary: Stand-in written by the symmtui demo sandbox

"""

_DIR = "sglang/srt/distributed/device_communicators"


class Sandbox(Struct, frozen=True):
    """Where the sandbox lives: ``site`` is the fake site-packages (pass it as ``--site``)."""

    site: Path
    package: Path
    version: str


def write_sandbox(dest: Path | None = None, *, version: str = DEFAULT_VERSION) -> Sandbox:
    """Write the fake install under ``dest`` (a new temp dir when None) and return where it is."""
    site = Path(tempfile.mkdtemp(prefix="symmtui-sandbox-")) if dest is None else dest
    files = {
        "sglang/__init__.py": _PKG_INIT,
        "sglang/version.py": _VERSION_PY.format(version=version),
        "sglang/srt/__init__.py": "",
        "sglang/srt/distributed/__init__.py": "",
        f"{_DIR}/__init__.py": "",
        f"{_DIR}/all_reduce_utils.py": _ALL_REDUCE_UTILS,
        f"{_DIR}/torch_symm_mem.py": _TORCH_SYMM_MEM,
        f"sglang-{version}.dist-info/METADATA": _METADATA.format(version=version),
    }
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Sandbox(site=site, package=site / "sglang", version=version)


def sandbox_has_capability(root: Path, capability: Capability | str | int | tuple[int, int]) -> bool:
    """Whether both symmetric-memory tables under ``root`` (a site dir or the package dir) hold it.

    Parsed with symmtui's own patch parser, never imported. False also when the tables can't be read.
    """
    cap = Capability.of(capability)
    root = Path(root)
    pkg_dir = root if (root / "srt").is_dir() else root / "sglang"
    for layout in layouts_for("sglang"):
        if not layout.present_in(pkg_dir):
            continue
        key = cap.key(layout.key_kind)
        try:
            for spec in layout.tables:
                data = (pkg_dir / spec.relpath).read_bytes()
                table = find_table(data, parse_module(data, spec.relpath), spec.name, layout.key_kind)
                if table.get(key) is None:
                    return False
        except (OSError, LayoutProblem):
            return False
        return True
    return False

