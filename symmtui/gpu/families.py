"""Compute capability -> architecture family and SM name, by the rows of the bring-up facts table."""

from __future__ import annotations

# (major, minor) -> family. Exact rows first; a major alone falls back to _MAJOR.
_EXACT: dict[tuple[int, int], str] = {
    (6, 0): "Pascal",
    (6, 1): "Pascal",
    (7, 0): "Volta",
    (7, 2): "Volta (Xavier)",
    (7, 5): "Turing",
    (8, 0): "Ampere",
    (8, 6): "Ampere",
    (8, 7): "Ampere (Orin)",
    (8, 9): "Ada",
    (9, 0): "Hopper",
    (10, 0): "Blackwell datacenter",
    (10, 3): "Blackwell datacenter",
    (11, 0): "Thor",
    (12, 0): "Blackwell RTX",
    (12, 1): "Blackwell RTX (GB10)",
}
_MAJOR: dict[int, str] = {
    6: "Pascal",
    7: "Volta/Turing",
    8: "Ampere",
    9: "Hopper",
    10: "Blackwell datacenter",
    11: "Thor",
    12: "Blackwell RTX",
}


def family(major: int, minor: int) -> str:
    """The architecture family for a capability, e.g. (8, 9) -> "Ada", (12, 0) -> "Blackwell RTX"."""
    exact = _EXACT.get((major, minor))
    if exact is not None:
        return exact
    return _MAJOR.get(major, f"unknown (capability {major}.{minor})")


def sm_name(major: int, minor: int) -> str:
    """The SM name used in build flags and bug reports: (12, 0) -> "SM120", (9, 0) -> "SM90"."""
    return f"SM{major}{minor}"
