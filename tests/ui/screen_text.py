"""Test helper: the app's current screen as plain text lines (what a user would read), from Textual's public
screenshot (``App.export_screenshot``: the screen with any screens behind a modal, as SVG)."""

from __future__ import annotations

import html
import re

from rich.cells import cell_len
from textual.app import App

CHAR_WIDTH = 20 * 0.61  # rich's export_svg: a cell is font_aspect_ratio (0.61) of the line height (20) wide
_TEXT = re.compile(r'<text [^>]*?x="([\d.]+)"[^>]*?clip-path="url\(#[\w-]+-line-(\d+)\)"[^>]*>(.*?)</text>')


def screen_text(app: App[object]) -> str:
    """Render the current screen to plain text: one line per terminal row, each cell where it is drawn."""
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
