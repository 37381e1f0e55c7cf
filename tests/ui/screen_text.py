"""Test helper: the app's current screen as plain text lines (what a user would read), rendered as Textual's
screenshot renders it (``App.export_screenshot``: the screen with any screens behind a modal), as text.

``export_screenshot`` prints that render to a recording console and exports SVG (24 ms a 120x40 dashboard on the
VM); the tests read the screen tens of times a second while they wait for something, so ``screen_text`` exports
the same console as text (5 ms) through the same two Textual attributes (the compositor, the screens behind).
``tests/ui/test_screen_text.py`` checks the two agree cell for cell, and fails if Textual renames either."""

from __future__ import annotations

import html
import io
import re

from rich.cells import cell_len
from rich.console import Console
from textual.app import App

CHAR_WIDTH = 20 * 0.61  # rich's export_svg: a cell is font_aspect_ratio (0.61) of the line height (20) wide
_TEXT = re.compile(r'<text [^>]*?x="([\d.]+)"[^>]*?clip-path="url\(#[\w-]+-line-(\d+)\)"[^>]*>(.*?)</text>')


def screen_text(app: App[object]) -> str:
    """Render the current screen to plain text: one line per terminal row, trailing blanks dropped."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens,
                                                       simplify=True))
    rows = [row.rstrip() for row in console.export_text().split("\n")[:height]]
    return "\n".join(rows + [""] * (height - len(rows)))


def screen_text_svg(app: App[object]) -> str:
    """The same from Textual's public SVG screenshot: each cell where it is drawn (the reference for the above)."""
    width, height = app.size
    rows = [[" "] * width for _ in range(height)]
    for x, line, content in _TEXT.findall(app.export_screenshot(simplify=True)):
        row = rows[int(line)] if int(line) < height else None
        if row is None:
            continue
        col = round(float(x) / CHAR_WIDTH)
        for char in html.unescape(content).replace("\xa0", " "):  # rich writes spaces as &#160;
            cells = cell_len(char)
            if col < width:
                row[col] = char
                for extra in range(1, cells):  # a wide character takes the next cell too
                    if col + extra < width:
                        row[col + extra] = ""
            col += cells
    return "\n".join("".join(row).rstrip() for row in rows)
