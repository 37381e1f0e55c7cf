"""Small pure formatting helpers shared by the widgets (sizes, clocks, bars, sparklines)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

GIB = 1024**3
SPARK = "▁▂▃▄▅▆▇█"


def gib(value: int | float) -> str:
    """Bytes as GiB with one decimal: 48318382080 -> '45.0'."""
    return f"{value / GIB:.1f}"


def memory_bar(used: int, reserved: int, total: int, width: int, *, high: bool = False) -> Content:
    """A one-line memory bar: used (solid), driver-reserved (shaded), free (light)."""
    width = max(1, width)
    if total <= 0:
        return Content.styled("·" * width, "$muted")
    used_cells = min(width, round(width * used / total))
    reserved_cells = min(width - used_cells, round(width * reserved / total))
    if reserved > 0 and reserved_cells == 0 and used_cells < width:
        reserved_cells = 1  # reserved memory is always visible, even when small
    free_cells = width - used_cells - reserved_cells
    return Content.assemble(
        ("█" * used_cells, "$gpu-mem-high" if high else "$gpu-mem-used"),
        ("▓" * reserved_cells, "$gpu-mem-reserved"),
        ("░" * free_cells, "$gpu-mem-free"),
    )


def sparkline(values: Sequence[float], width: int) -> str:
    """The last `width` fractions (0..1) as block characters, right-aligned."""
    tail = list(values)[-width:]
    chars = "".join(SPARK[min(len(SPARK) - 1, max(0, int(v * (len(SPARK) - 1) + 0.5)))] for v in tail)
    return chars.rjust(width)


def progress_bar(done: int, total: int, width: int) -> Content:
    """A one-line progress bar for a/b."""
    width = max(1, width)
    filled = 0 if total <= 0 else min(width, round(width * done / total))
    return Content.assemble(("█" * filled, "$gauge-bar"), ("░" * (width - filled), "$gauge-bar-empty"))


def short_gpu_name(name: str) -> str:
    """'NVIDIA RTX PRO 6000 Blackwell Server Edition' -> 'RTX PRO 6000 Blackwell Server Edition'."""
    return name.removeprefix("NVIDIA ").strip()


def fit(text: str, width: int) -> str:
    """Cut to width with an ellipsis, pad to width."""
    if width <= 0:
        return ""
    if len(text) > width:
        return text[: max(0, width - 1)] + "…"
    return text.ljust(width)


def set_content(widget: Static, content: Content) -> None:
    """Update a Static only when its content changed; skip the layout pass when it stays one line, or
    while the widget is not displayed (displaying it again lays the screen out anyway).

    A layout pass costs the whole screen a reflow; the gauge's clock lines change every second, the
    GPU panel's hidden process list at every sample.
    """
    old: Content | None = getattr(widget, "_symmtui_content", None)
    if old is not None and old.plain == content.plain and old.spans == content.spans:
        return
    width = widget.size.width
    one_line = (
        old is not None
        and width > 0
        and "\n" not in old.plain
        and "\n" not in content.plain
        and old.cell_length <= width
        and content.cell_length <= width
    )
    widget._symmtui_content = content  # type: ignore[attr-defined]
    widget.update(content, layout=widget.display and not one_line)
