"""The dashboard's log pane: a Line API view over the whole log file, read where it lies (toolong's way).

Use (the dashboard):

    log = LogView(id="log")             # compose it; it fills what it is given
    log.view_file(path)                 # a new file (a launch's log, a log command's spool): indexed on a thread
    log.poke()                          # the engine read more of it: look at the file now (else once a second)
    log.notice(kind)                    # the follower's notices: "truncated" starts the pane over
    log.add_events(events)              # the engine's events: rows marked by their byte offsets, blocks, n/N

No log text comes through the app: the pane indexes the file itself (``log_file``: 8 bytes a line), reads
the rows it shows, and marks them from the events' offsets (``log_index``). Search, filters, go-to and ``e``
run over the whole file on worker threads (``log_filters``), with counts that say when they are still counting
(``3 of 41,200…``, then ``3 of 500,000``).

Keys (the pane's bindings; the scrolling body's are less's, vim's and lnav's: j/k, Space/b, ctrl+d/ctrl+u,
g/G, Home/End, a count before g or G goes to that line): f follow, / and ? search forward and back (Enter: the
first match, then n / N walk them), e errors only, n / N next / previous match while a search is on, else
error, ] / [ next / previous error, i / x filter in / out by regex (lnav's :filter-in / :filter-out; a record
is kept or hidden whole), X clears them, w soft wrap (every character kept), z folds / unfolds the other
ranks' copies of a traceback, : an lnav-style command line (goto WHERE, filter-in RE, filter-out RE,
clear-filters, wrap, fold, errors; a bare number or phase goes there). `LogView.commands()` gives them as
command palette entries.

Messages: `LogView.FollowChanged(following)`, `LogView.ErrorSelected(line_no, summary)`.
State for tests and the app: `following`, `new_lines`, `errors_only`, `filters`, `wrap`, `search_text`,
`match_position()`, `error_count`, `line_count`, `cursor_line_no`, `visible_lines()`, `settled`.

Colours come only from component classes (`log-view--crash`, ...), whose defaults use Textual's theme variables;
rendered strips are cached and the cache is dropped whenever styles or the theme change.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar

from msgspec import Struct
from rich.cells import cell_len, get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input

from symmtui import fsatomic
from symmtui.errors import UserError
from symmtui.judge.events import MAX_SPANS, EventBuilder
from symmtui.logs.decode import LogLine
from symmtui.patterns import UserPattern
from symmtui.textsafe import visible
from symmtui.ui.widgets import log_goto
from symmtui.ui.widgets.log_file import LogFile, follow, take_ahead
from symmtui.ui.widgets.log_filters import FilterRule, Found, Records, compile_search, count, find, keep
from symmtui.ui.widgets.log_index import (
    BLOCK_END,
    CRASH,
    ERRORISH,
    INFO,
    KIND_MASK,
    PHASE,
    PROGRESS,
    READY,
    WARNING,
    EventLike,
    LineIndex,
)

__all__ = ["LogLines", "LogSearch", "LogStatus", "LogView"]

_KIND_CLASS = {
    CRASH: "log-view--crash",
    WARNING: "log-view--warning",
    READY: "log-view--ready",
    PHASE: "log-view--phase",
    PROGRESS: "log-view--progress",
    INFO: "log-view--info",
}
_GUTTER = 2
MAX_EXPORT = 1_000_000  # lines an export writes at most
_JUDGE_ROWS = 20_000  # rows the pane's own judging feeds the event builder at a time
PAINT_WAIT = 1.0  # seconds at most the head of a big file waits for the frame that shows its end
ROW_CACHE = 256
"""Rendered rows kept (``_Rows``)."""
TAKE_GAP = 0.05
"""Seconds at least between two takes of a growing file: a flood is drawn at 20 Hz, not as fast as the UI can
(it took the event loop whole, and a key waited 100-140 ms behind frames: bench.peers keys)."""


def _clean(text: str) -> str:
    """Tabs expanded; control characters and escape sequences shown as text (``\\x1b]0;...``) by the
    one sanitiser, never passed to the terminal (the pane shows the ANSI-free text)."""
    if "\t" in text:
        text = text.expandtabs(8)
    return visible(text)


def wrap_segments(segments: Sequence[Segment], room: int) -> list[list[Segment]]:
    """``segments`` cut into pieces of at most ``room`` cells, never inside a character: a wide character
    (CJK, emoji) that does not fit goes whole to the next piece, so every character is shown once."""
    room = max(room, 2)
    pieces: list[list[Segment]] = [[]]
    used = 0
    for seg in segments:
        text, style = seg.text, seg.style
        while text:
            if text.isascii():  # one cell a character
                take = min(len(text), room - used)
            else:
                take, cells = 0, 0
                for ch in text:
                    width = get_character_cell_size(ch)
                    if used + cells + width > room and (used + cells or take):
                        break
                    cells += width
                    take += 1
                    if used + cells >= room:
                        break
            if take:
                pieces[-1].append(Segment(text[:take], style))
                used += cell_len(text[:take])
                text = text[take:]
            if text:
                pieces.append([])
                used = 0
    return pieces


class _Rows:
    """Rendered rows by key, the least recently used dropped past ``size``. An OrderedDict: a row dropped or
    cleared is freed at once. Textual's LRUCache links its entries in a ring, so each clear (new marks, a
    filter) left every row, with the strips Textual derives from it, to the cyclic collector; during a 50k
    lines/s flood its full collections came twice a second and took 40-110 ms each, and a key waited."""

    def __init__(self, size: int) -> None:
        self._rows: OrderedDict[tuple[str, int, bool], Strip] = OrderedDict()
        self._size = size

    def get(self, key: tuple[str, int, bool]) -> Strip | None:
        strip = self._rows.get(key)
        if strip is not None:
            self._rows.move_to_end(key)
        return strip

    def __setitem__(self, key: tuple[str, int, bool], strip: Strip) -> None:
        rows = self._rows
        rows[key] = strip
        rows.move_to_end(key)
        if len(rows) > self._size:
            rows.popitem(last=False)

    def discard(self, key: tuple[str, int, bool]) -> None:
        self._rows.pop(key, None)

    def clear(self) -> None:
        self._rows.clear()


class LogLines(ScrollView, can_focus=True):
    """The scrolling body of a `LogView`: renders view lines from the index, one `Strip` each."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "line(1)", "Down", show=False, tooltip="One line down (j, as in less and vim)"),
        Binding("k,up", "line(-1)", "Up", show=False, tooltip="One line up (k)"),
        Binding("space,pagedown", "page(1)", "Page down", show=False, tooltip="One screen down (Space, as in less)"),
        Binding("b,pageup", "page(-1)", "Page up", show=False, tooltip="One screen up (b)"),
        Binding("ctrl+d", "half(1)", "Half down", show=False, tooltip="Half a screen down"),
        Binding("ctrl+u", "half(-1)", "Half up", show=False, tooltip="Half a screen up"),
        Binding("g,home", "top", "Top", show=False,
                tooltip="The first line (a count before it: that line, as 120g in less)"),
        Binding("G,end", "end", "End", show=False, key_display="G",
                tooltip="The last line, and follow (a count before it: that line)"),
        Binding("left", "sideways(-1)", "Left", show=False, tooltip="Scroll left (lines are cut; w wraps them)"),
        Binding("right", "sideways(1)", "Right", show=False, tooltip="Scroll right"),
    ]

    COMPONENT_CLASSES = {
        "log-view--crash",
        "log-view--warning",
        "log-view--ready",
        "log-view--phase",
        "log-view--progress",
        "log-view--info",
        "log-view--summary",
        "log-view--match",
        "log-view--cursor",
        "log-view--gutter",
        "log-view--dim",
    }

    DEFAULT_CSS = """
    LogLines {
        height: 1fr;
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        .log-view--crash { color: $error; }
        .log-view--warning { color: $warning; }
        .log-view--ready { color: $success; text-style: bold; }
        .log-view--phase { color: $accent; }
        .log-view--progress { color: $primary; }
        .log-view--info { color: $foreground; }
        .log-view--summary { color: $error; text-style: bold; background: $error 15%; }
        .log-view--match { color: auto 90%; background: $warning 70%; text-style: bold; }
        .log-view--cursor { background: $primary 35%; }
        .log-view--gutter { color: $foreground-muted; }
        .log-view--dim { color: $foreground-muted; }
    }
    """

    def __init__(self, owner: LogView) -> None:
        super().__init__()
        self._owner = owner
        self._cache: _Rows = _Rows(ROW_CACHE)
        self._version = 0  # bumped whenever a cached strip is dropped (the wrap layout follows it)
        self._layout_key: tuple[int, ...] | None = None
        self._layout: list[Strip] = []
        self._count = ""  # digits typed before g / G (less's 120g)

    @property
    def _index(self) -> LineIndex:
        return self._owner.index

    # -- size: new lines change the virtual size, never the pane's own; no layout for them
    def set_virtual_size(self, size: Size) -> None:
        """Set the scrollable size. Once laid out, only the scrollbars and scroll limits follow it: the
        pane's region does not depend on it, so a layout of the screen per batch of lines would change
        nothing. A horizontal scrollbar appearing or going still asks for one, through the reactive."""
        if size == self.virtual_size:
            return
        wide = size.width > self.container_size.width
        if self.size.area == 0 or wide != self.show_horizontal_scrollbar:
            self.virtual_size = size  # not laid out yet, or a scrollbar to show or hide: a layout
            if self._owner.following:  # the scrollbar takes a row: still at the end once laid out
                self.call_after_refresh(self._owner._scroll_end)
            return
        width_changed = size.width != self.virtual_size.width
        self.set_reactive(Widget.virtual_size, size)
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar.window_virtual_size = size.height
        if width_changed and self.show_horizontal_scrollbar:
            self.horizontal_scrollbar.window_virtual_size = size.width
        self.scroll_x = self.validate_scroll_x(self.scroll_x)
        self.scroll_y = self.validate_scroll_y(self.scroll_y)
        self.refresh()

    # -- cache
    def notify_style_update(self) -> None:
        """Styles or theme changed: every cached strip is stale."""
        super().notify_style_update()
        self.clear_cache()

    def clear_cache(self) -> None:
        """Drop every rendered strip."""
        self._cache.clear()
        self._version += 1

    def discard_rows(self, rows: Sequence[int]) -> None:
        """Drop the rendered strips of `rows` (re-marked, or still being written)."""
        self._version += 1
        for row in rows:
            self._cache.discard(("r", row, False))
            self._cache.discard(("r", row, True))

    # -- keys
    def on_key(self, event: events.Key) -> None:
        """Digits before g / G: go to that line (less's ``120g``); any other key forgets them."""
        if event.character is not None and event.character.isdigit() and len(self._count) < 12:
            self._count += event.character
            event.stop()
            self._owner._note = f"go to line {int(self._count):,}: g"
            self._owner._status.refresh()
        elif event.key not in ("g", "G", "home", "end", "shift+g"):
            self._count = ""

    def _take_count(self) -> int | None:
        count, self._count = self._count, ""
        return int(count) if count else None

    def action_line(self, step: int) -> None:
        self._owner._scroll_by(step)

    def action_page(self, direction: int) -> None:
        self._owner._scroll_by(direction * max(1, self.scrollable_content_region.height - 1))

    def action_half(self, direction: int) -> None:
        self._owner._scroll_by(direction * max(1, self.scrollable_content_region.height // 2))

    def action_top(self) -> None:
        line = self._take_count()
        if line is not None:
            self._owner.go_to(str(line))
            return
        self._owner._scroll_home()

    def action_end(self) -> None:
        line = self._take_count()
        if line is not None:
            self._owner.go_to(str(line))
            return
        self._owner._set_following(True)

    def action_sideways(self, direction: int) -> None:
        if not self._owner.wrap:
            self.scroll_to(x=self.scroll_x + direction * 8, animate=False, immediate=True)

    # -- scrolling
    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._owner._scrolled(old_value, new_value)

    def on_resize(self) -> None:
        if self._owner.wrap:
            self._owner._update_size()
        if self._owner.following:
            self._owner._scroll_end()

    def watch_show_horizontal_scrollbar(self, shown: bool) -> None:
        """A line wider than the pane brought the scrollbar: the pane is a row shorter, and when following its
        end (the last line) would sit under the scrollbar; scroll to it once the new size is laid out."""
        if shown and self._owner.following:
            self.call_after_refresh(self._owner._scroll_end)

    # -- rendering
    @property
    def text_width(self) -> int:
        """Cells a line may use: the pane's width without its vertical scrollbar."""
        return self.scrollable_content_region.width

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.text_width
        base = self.rich_style
        if self._owner.wrap:
            layout = self._wrapped(width, base)
            return layout[y] if y < len(layout) else Strip.blank(width, base)
        vy = scroll_y + y
        if vy >= self._index.view_len():
            return self._empty_line(y, width, base)
        strip, pad = self._full_strip(vy, base)
        return strip.crop_extend(scroll_x, scroll_x + width, pad)

    def _empty_line(self, y: int, width: int, base: Style) -> Strip:
        """Below the last line: blank; on an empty view's first line, why it is empty."""
        index = self._index
        if y != 0 or index.view_len():
            return Strip.blank(width, base)
        why = self._owner.empty_reason()
        if not why:
            return Strip.blank(width, base)
        return Strip([Segment(f"  {why}", self._style("log-view--dim"))]).crop_extend(0, width, base)

    def _wrapped(self, width: int, base: Style) -> list[Strip]:
        """The screen in soft-wrap mode: whole view lines cut into pieces of the pane's width.

        Scrolling moves by view lines: the top line is the view line at ``scroll_y``; at the end of the
        view (following) the screen is filled from the last line up, so the last line is always whole."""
        height = self.size.height
        index = self._index
        key = (int(self.scroll_y), width, height, index.view_len(), self._version, self._owner._cursor or -1)
        if self._layout_key == key:
            return self._layout
        total = index.view_len()
        top = int(self.scroll_y)
        out: list[Strip] = []
        if total and top >= self.max_scroll_y:
            vy = total - 1
            while vy >= 0 and len(out) < height:
                out[:0] = self.pieces(vy, width, base)
                vy -= 1
            if len(out) >= height or vy >= 0:
                out = out[-height:]
            else:
                top = 0
                out = []
        if not out:
            vy = top
            while vy < total and len(out) < height:
                out += self.pieces(vy, width, base)
                vy += 1
            out = out[:height]
        if not total:
            out = [self._empty_line(0, width, base)]
        self._layout_key, self._layout = key, out
        return out

    def pieces(self, vy: int, width: int, base: Style | None = None) -> list[Strip]:
        """View line ``vy`` wrapped to ``width`` cells: the gutter on its first piece, blank on the others."""
        base = base if base is not None else self.rich_style
        strip, pad = self._full_strip(vy, base)
        if strip.cell_length <= width:
            return [strip.extend_cell_length(width, pad)]
        segments = list(strip)
        gutter = Strip(segments).crop(0, _GUTTER)
        body = list(Strip(segments).crop(_GUTTER, strip.cell_length))
        blank = Strip([Segment(" " * _GUTTER, pad)])
        return [Strip.join([gutter if i == 0 else blank, Strip(piece)]).extend_cell_length(width, pad)
                for i, piece in enumerate(wrap_segments(body, width - _GUTTER))]

    def _full_strip(self, vy: int, base: Style) -> tuple[Strip, Style]:
        """The whole line at view line `vy` (cached) and the style that pads it to the pane's width."""
        index = self._index
        cursor = self._owner._cursor
        is_summary, value = index.view_entry(vy)
        if is_summary:
            block = index.blocks[value]
            key = ("s", block.start, cursor == block.start)
        else:
            key = ("r", value, cursor == value)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._summary_strip(value, key[2]) if is_summary else self._row_strip(value, key[2])
            if is_summary or self._owner._stable(value):
                self._cache[key] = strip
            self._owner._saw_width(strip.cell_length)
        if is_summary:
            pad = self._style("log-view--summary")
            return strip, pad + self._cursor_style() if key[2] else pad
        return strip, base + self._cursor_style() if key[2] else base

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name)

    def _cursor_style(self) -> Style:
        """Only the cursor's background (blended with the pane's), so the kind's colour stays."""
        return Style(bgcolor=self._style("log-view--cursor").bgcolor)

    def _summary_strip(self, k: int, cursor: bool) -> Strip:
        block = self._index.blocks[k]
        style = self._style("log-view--summary")
        if cursor:
            style += self._cursor_style()
        return Strip([Segment(f"▶ {_clean(self._index.block_summary(block))}", style)])

    def _row_strip(self, row: int, cursor: bool) -> Strip:
        index = self._index
        flags = index.flags(row)
        kind = flags & KIND_MASK
        style = self._style(_KIND_CLASS[kind]) if kind in _KIND_CLASS else self.rich_style
        if flags & BLOCK_END:
            style += Style(bold=True)
        gutter_style = style if flags & ERRORISH else self._style("log-view--gutter")
        if cursor:
            extra = self._cursor_style()
            style += extra
            gutter_style += extra
            gutter = "▸ "
        else:
            gutter = "┃ " if flags & ERRORISH else "  "
        text = _clean(index.text(row))
        segments = [Segment(gutter, gutter_style)]
        rx = self._owner._rx
        if rx is not None:
            segments.extend(self._split_matches(text, rx, style))
        else:
            segments.append(Segment(text, style))
        if index.cut(row):
            segments.append(Segment(" …(line cut)", self._style("log-view--dim")))
        return Strip(segments)

    def _split_matches(self, text: str, rx: UserPattern, style: Style) -> list[Segment]:
        match_style = style + self._style("log-view--match")
        out: list[Segment] = []
        pos = 0
        for m in rx.finditer(text):
            a, b = m.span()
            if b <= a:
                continue
            if a > pos:
                out.append(Segment(text[pos:a], style))
            out.append(Segment(text[a:b], match_style))
            pos = b
        if pos < len(text):
            out.append(Segment(text[pos:], style))
        return out


class LogSearch(Input):
    """The pane's prompt: search (Enter: the first match, Up/Down: previous/next), a filter in or out, or an
    lnav-style command (``goto WHERE``, ``filter-in RE``, ``filter-out RE``, ``clear-filters``); Escape closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", show=False, tooltip="Close the box (a search's highlight goes)"),
        Binding("down", "step(True)", "Next match", show=False, tooltip="In the search box: the next match"),
        Binding("up", "step(False)", "Previous match", show=False, tooltip="In the search box: the previous match"),
    ]

    DEFAULT_CSS = """
    LogSearch {
        display: none;
        height: 1;
        border: none;
        padding: 0 1;
        &.-open { display: block; }
    }
    """

    PLACEHOLDERS = {
        "search": "search the log (a regex; Enter: next match, then n/N; Escape: close)",
        "search-back": "search the log backwards (a regex; Enter: previous match, then n/N; Escape: close)",
        "filter-in": "filter in: show only the records matching this regex (Enter: apply; X clears filters)",
        "filter-out": "filter out: hide the records matching this regex (Enter: apply; X clears filters)",
        "command": "goto WHERE · filter-in RE · filter-out RE · clear-filters · wrap · fold · errors",
    }

    def __init__(self, owner: LogView) -> None:
        # compact: Input's own `:focus { border: tall }` would otherwise eat the one text row
        super().__init__(placeholder=self.PLACEHOLDERS["search"], compact=True)
        self._owner = owner
        self.mode = "search"
        self.typed_ahead: Callable[[], str] = lambda: ""
        """The keys typed after the key that opened the box and before it had the focus (the app keeps them)."""

    def on_focus(self, event: events.Focus) -> None:
        """The keys typed ahead become the box's text here, in its own queue: keys typed after them are still
        queued behind this focus (a paste posted by the app came after them: "/prr" read "rrp")."""
        ahead = self.typed_ahead()
        if ahead:
            self.value = ahead  # (typed keys replace the old text, as typing into its selection does)
            self.cursor_position = len(ahead)
            self.select_on_focus = False  # Input's own focus handling, after this one, would select them
            self.call_later(setattr, self, "select_on_focus", True)

    def open(self, mode: str) -> None:
        """Show the prompt in ``mode`` and focus it (a search keeps its text; the others start empty)."""
        searching = mode.startswith("search") and self.mode.startswith("search")
        if not searching:
            self.value = ""
        self.mode = mode
        self.placeholder = self.PLACEHOLDERS[mode]
        self.add_class("-open")
        self.focus()

    def action_close(self) -> None:
        self._owner.action_close_search()

    def action_step(self, forward: bool) -> None:
        if self.mode.startswith("search"):
            self._owner._step_match(forward=forward)


class _Part(Struct, frozen=True):
    """One part of the status line: its text and how much it matters (0 first; a narrow pane drops the last)."""

    text: Text
    rank: int


class LogStatus(Widget):
    """The one-line state of a `LogView`: following or paused, the search, the filters, errors, the line count.
    A part that does not fit is left out whole (the least important first), never cut mid-word."""

    COMPONENT_CLASSES = {"log-view--status-following", "log-view--status-paused", "log-view--status-note",
                         "log-view--status-chip"}

    DEFAULT_CSS = """
    LogStatus {
        height: 1;
        background: $panel;
        color: $foreground-muted;
        .log-view--status-following { color: $success; text-style: bold; }
        .log-view--status-paused { color: $warning; text-style: bold; }
        .log-view--status-note { color: $foreground; }
        .log-view--status-chip { color: $background; background: $accent; }
    }
    """

    def __init__(self, owner: LogView) -> None:
        super().__init__()
        self._owner = owner

    def parts(self) -> list[_Part]:
        """Every part, in the order shown, each with its rank."""
        owner = self._owner
        note_style = self.get_component_rich_style("log-view--status-note")
        chip_style = self.get_component_rich_style("log-view--status-chip")
        parts: list[_Part] = []

        def add(rank: int, *pieces: str | tuple[str, Style]) -> None:
            parts.append(_Part(Text.assemble(*pieces), rank))

        if owner.following:
            add(0, (" ● following", self.get_component_rich_style("log-view--status-following")))
        else:
            new = owner.new_lines
            paused = f" ❚❚ paused — {new:,} new line{'s' if new != 1 else ''}" if new else " ❚❚ paused"
            add(0, (paused, self.get_component_rich_style("log-view--status-paused")))
            add(4, " (f: follow)")
        if owner.indexing:
            add(1, (f" · {owner.indexing}", note_style))
        if owner.search_text:  # "/shard/ 3 of 17"
            add(0, (f" · /{owner.search_text}/ {owner.match_position()}", note_style))
        if owner._note:  # what the last key did: kept, shortened at a word if it must be
            add(0, (f" · {owner._note}", note_style))
        if owner.errors_only:
            add(1, (" · errors only (e)", note_style))
        for rule in owner.filters:
            add(1, " ", (f" {rule.chip} ", chip_style))
        if owner.filtering:
            add(1, (f" {owner.filtering}", note_style))
        elif owner.filters or owner.errors_only:
            add(2, f" {owner.hidden_count:,} hidden" + (" (X clears)" if owner.filters else ""))
        if owner.judging:
            add(2, (f" · {owner.judging}", note_style))
        if owner.wrap:
            add(3, (" · wrap (w)", note_style))
        # counts are the engine's events (a traceback from 8 ranks is one); n/N walks every marked line
        crashes, warnings = len(owner.index.crash_events), len(owner.index.warning_events)
        if crashes:
            add(3, f" · {crashes:,} error{'s' if crashes != 1 else ''}")
        if warnings:
            add(3, f" · {warnings:,} warning{'s' if warnings != 1 else ''}")
        stops = owner.error_count
        if owner.error_position:
            add(2, f" · mark {owner.error_position}/{stops}")
        elif stops and not (crashes or warnings):
            add(3, f" · {stops:,} marked line{'s' if stops != 1 else ''}")
        lines = owner.index.rows
        add(2, f" · {lines:,} line{'s' if lines != 1 else ''}")
        return parts

    def render(self) -> Text:
        """The parts that fit the width, the most important kept first; shown in their own order."""
        parts = self.parts()
        width = self.size.width or 10_000
        room = width
        keep: set[int] = set()
        for rank in range(5):
            for i, part in enumerate(parts):
                if part.rank == rank and part.text.cell_len <= room:
                    keep.add(i)
                    room -= part.text.cell_len
                elif part.rank == rank == 0 and i not in keep and room > 12:  # a note: shortened at a word
                    plain = part.text.plain
                    cut = plain[: room - 2].rsplit(" ", 1)[0]
                    parts[i] = _Part(Text(cut + " …", style=part.text.spans[0].style if part.text.spans else ""), 0)
                    keep.add(i)
                    room -= parts[i].text.cell_len
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, part in enumerate(parts):
            if i in keep:
                text.append_text(part.text)
        if not keep and parts:
            text.append_text(parts[0].text)  # narrower than its first part: cut with an ellipsis
        return text


class _FileChanged(Message):
    """The file thread indexed more of ``file`` (or its generation ended); ``job`` posts one at a time."""

    def __init__(self, file: LogFile, job: _Job) -> None:
        super().__init__()
        self.file = file
        self.job = job


class _Scanned(Message):
    """A worker's report: ``what`` ("count", "keep", "find", "judge", "export") of ``job`` (a job replaced
    since is not listened to)."""

    def __init__(self, what: str, job: _Job, found: Found | None = None, row: int | None = None,
                 events: Sequence[EventLike] = (), marks: Sequence[tuple[int, str, str]] = (),
                 error: str = "") -> None:
        super().__init__()
        self.what, self.job, self.found, self.row = what, job, found, row
        self.events, self.marks, self.error = events, marks, error


class _Job:
    """A worker thread's stop and wake-up: ``wait()`` blocks until the file grew (True) or the job ends (False)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.posted = threading.Event()  # a message of this job's is on its way (one at a time)
        self.painted = threading.Event()  # a frame after the UI took this job's rows was drawn

    def wait(self) -> bool:
        self.wake.wait()
        self.wake.clear()
        return not self.stop.is_set()

    def cancel(self) -> None:
        self.stop.set()
        self.wake.set()


class LogView(Vertical):
    """The log pane; see the module docstring for the API."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "toggle_follow", "Follow", tooltip="Follow the end of the log, or pause"),
        Binding("slash", "search", "Find", key_display="/", tooltip="Search the log (a regex); then n / N"),
        Binding("question_mark", "search_back", "Find back", key_display="?", show=False,
                tooltip="Search the log backwards (as in less and vim)"),
        Binding("e", "toggle_errors", "Errors", tooltip="Show only crash and warning lines (the whole file)"),
        Binding("n", "next", "Next", tooltip="Next search match (while a search is on), else the next error"),
        Binding("N", "previous", "Prev", key_display="N",
                tooltip="Previous search match (while a search is on), else the previous error"),
        Binding("right_square_bracket", "next_error", "Next error", key_display="]", show=False,
                tooltip="The next error, always"),
        Binding("left_square_bracket", "previous_error", "Previous error", key_display="[", show=False,
                tooltip="The previous error, always"),
        Binding("i", "filter_in", "Filter in", show=False,
                tooltip="Show only the records a regex matches (lnav's :filter-in)"),
        Binding("x", "filter_out", "Filter out", show=False,
                tooltip="Hide the records a regex matches (lnav's :filter-out)"),
        Binding("X", "clear_filters", "Clear filters", key_display="X", show=False, tooltip="Remove the regex filters"),
        Binding("w", "toggle_wrap", "Wrap", show=False, tooltip="Soft-wrap long lines (every character kept), or cut them"),
        Binding("z", "toggle_fold", "Fold", show=False, tooltip="Fold other ranks' copies of a traceback, or unfold"),
        Binding("colon", "command", "Command", key_display=":", show=False,
                tooltip="lnav's command line: goto WHERE (a line, 09:47:20, +8m01s, a phase), filter-in RE, "
                        "filter-out RE, clear-filters"),
        Binding("escape", "close_search", "Close search", show=False, tooltip="Close the search (its highlight goes)"),
    ]

    DEFAULT_CSS = """
    LogView {
        height: 1fr;
        layout: vertical;
    }
    """

    class FollowChanged(Message):
        """Following paused (the user scrolled up, jumped, or pressed f) or resumed."""

        def __init__(self, log_view: LogView, following: bool) -> None:
            super().__init__()
            self.log_view = log_view
            self.following = following

        @property
        def control(self) -> LogView:
            return self.log_view

    class ErrorSelected(Message):
        """n/N landed on an error: its line number (the file's, from 1) and summary."""

        def __init__(self, log_view: LogView, line_no: int, summary: str) -> None:
            super().__init__()
            self.log_view = log_view
            self.line_no = line_no
            self.summary = summary

        @property
        def control(self) -> LogView:
            return self.log_view

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.index = LineIndex()
        self.path: Path | None = None
        self.following = True
        self.new_lines = 0
        self.error_position = 0
        self.wrap = False
        self.filters: tuple[FilterRule, ...] = ()
        self.filtering = ""  # "filtering… 40%" while the filters' rows are being judged
        self.judging = ""  # "judging the file for errors…" while the pane judges what the engine did not
        self._judged: LogFile | None = None  # the file generation judged (or being judged) by the pane itself
        self._cursor: int | None = None
        self._search = ""  # the search's text
        self._rx: UserPattern | None = None  # its pattern
        self._search_forward = True
        self._matches: array[int] = array("Q")  # rows it matches, in order (the count so far)
        self._counted = True  # the count is done
        self._count_judged = 0  # rows the count has judged
        self._pending_step: bool | None = None  # a step (forward?) waiting for the count or a find
        self._note = ""
        self._programmatic = False
        self._jobs: dict[str, _Job] = {}
        self._file_job: _Job | None = None
        self._taken = -TAKE_GAP  # the time.monotonic() of the last take of the file's growth
        self._widest = 0  # cells of the widest line rendered
        self._lines = LogLines(self)
        self._prompt = LogSearch(self)
        self._status = LogStatus(self)

    def compose(self) -> ComposeResult:
        yield self._lines
        yield self._prompt
        yield self._status

    def on_unmount(self) -> None:
        for job in self._jobs.values():
            job.cancel()
        self._jobs.clear()
        if self._file_job is not None:
            self._file_job.cancel()
        if self.index.file is not None:
            self.index.file.close()  # a thread still reading it reads nothing more (LogFile's lock)

    # ------------------------------------------------------------------ public state
    @property
    def lines(self) -> LogLines:
        """The scrolling body (what has focus)."""
        return self._lines

    @property
    def line_count(self) -> int:
        """Rows of the file indexed so far."""
        return self.index.rows

    @property
    def error_count(self) -> int:
        """Stops for n/N: traceback blocks and crash/warning lines."""
        return len(self.index.targets)

    @property
    def errors_only(self) -> bool:
        """Whether the errors-only filter is on."""
        return self.index.errors_only

    @property
    def search_text(self) -> str:
        """The search's text ('' when no search)."""
        return self._search

    @property
    def hidden_count(self) -> int:
        """Rows the filters hide."""
        return self.index.rows - self.index.shown_count() if self.index.filtered else 0

    @property
    def indexing(self) -> str:
        """``indexing 40%`` while the file's first part is being indexed, or why it cannot be read."""
        file = self.index.file
        if file is None:
            return ""
        if file.error and not file.rows:
            return file.error
        if not file.indexed:
            return f"indexing {file.progress() * 100:.0f}%"
        return ""

    @property
    def settled(self) -> bool:
        """Nothing is being indexed, counted, filtered or judged (tests wait for it)."""
        file = self.index.file
        return ((file is None or (file.indexed and file.rows == self.index.rows and file.end >= file.size))
                and self._counted and not self.filtering and not self.judging and self._pending_step is None)

    @property
    def cursor_line_no(self) -> int | None:
        """Line number (the file's) of the selected error or match, if any."""
        if self._cursor is None or not 0 <= self._cursor < self.index.rows:
            return None
        return self.index.no_for_row(self._cursor)

    def match_position(self) -> str:
        """``3 of 17`` (the selected match among every match in the file), ``17 matches``, ``3 of 41,200…``
        while counting, ``no match``."""
        found = self._matches
        total = len(found)
        more = "" if self._counted else "…"
        if not total:
            return "no match" if self._counted else "counting…"
        cursor = self._cursor
        if cursor is not None:
            k = bisect_left(found, cursor)
            if k < total and found[k] == cursor:
                return f"{k + 1:,} of {total:,}{more}"
        return f"{total:,}{more} match{'es' if total != 1 else ''}"

    def empty_reason(self) -> str:
        """Why the view is empty (shown on its first line)."""
        index = self.index
        if index.file is None:
            return "no log file yet"
        if not index.rows:
            return index.file.error or ("indexing…" if not index.file.indexed else "the log is empty")
        if self.filtering:
            return self.filtering
        if index.errors_only and not self.filters:
            if self.judging:
                return f"no errors yet ({self.judging})"
            return f"no errors in {index.rows:,} lines (e shows everything)"
        return "no line passes the filters (X clears the regex filters, e the errors-only one)"

    def focus(self, scroll_visible: bool = True) -> LogView:
        """Focus the scrolling body (the container itself takes no focus)."""
        self._lines.focus(scroll_visible)
        return self

    def visible_lines(self) -> list[str]:
        """The text of each line on screen, as rendered (gutter included)."""
        return [self._lines.render_line(y).text for y in range(self._lines.size.height)]

    def commands(self) -> list[SystemCommand]:
        """Command palette entries for the pane's actions (yield them from `App.get_system_commands`)."""
        cmds = [
            SystemCommand("Log: follow on/off", "Follow the end of the log, or pause (f)", self.action_toggle_follow),
            SystemCommand("Log: search", "Search the log (/), then n / N between the matches", self.action_search),
            SystemCommand("Log: errors only", "Show only crash and warning lines, or everything (e)",
                          self.action_toggle_errors),
            SystemCommand("Log: next error", "Jump to the next error (] or n)", self.action_next_error),
            SystemCommand("Log: previous error", "Jump to the previous error ([ or N)", self.action_previous_error),
            SystemCommand("Log: filter in…", "Show only the records a regex matches (i; lnav's :filter-in)",
                          self.action_filter_in),
            SystemCommand("Log: filter out…", "Hide the records a regex matches (x; lnav's :filter-out)",
                          self.action_filter_out),
            SystemCommand("Log: clear filters", "Remove every regex filter (X)", self.action_clear_filters),
            SystemCommand("Log: soft wrap on/off", "Wrap long lines, or cut them (w)", self.action_toggle_wrap),
            SystemCommand("Log: fold tracebacks on/off", "Fold the other ranks' copies of a traceback (z)",
                          self.action_toggle_fold),
            SystemCommand("Log: go to…", "A line, a log time (09:47:20, +8m01s) or a phase (:goto)",
                          self.action_go_to),
            SystemCommand("Log: first line", "The log's first line (g)", self._scroll_home),
        ]
        for name, row in self._phase_starts():
            cmds.append(SystemCommand(f"Log: go to {name}", f"The first line of {name} (line {row + 1:,})",
                                      partial(self.go_to, name)))
        return cmds

    def _phase_starts(self) -> list[tuple[str, int]]:
        seen: dict[str, int] = {}
        for name, row in self.index.phases:
            seen[name] = min(row, seen.get(name, row))
        return list(seen.items())

    # ------------------------------------------------------------------ the file
    def view_file(self, path: str | Path | None, *, fresh: bool = True) -> None:
        """Show ``path`` (a new launch's log, a log command's spool): indexed from its first line on a thread.
        The same path again (a relaunch appending to it) keeps the index and forgets the marks (``fresh``)."""
        same = path is not None and self.path is not None and Path(path) == self.path and self.index.file is not None
        if same and not fresh:
            return
        self._reset_marks()
        if same:
            self.index.clear(self.index.file)
            self.index.sync()
            self._after_change()
            return
        self._start_file(Path(path) if path is not None else None)

    def _start_file(self, path: Path | None) -> None:
        if self._file_job is not None:
            self._file_job.cancel()
        old = self.index.file
        self.path = path
        ahead = take_ahead(path) if path is not None else None  # its end indexed as the dashboard started
        file = ahead[0] if ahead is not None else LogFile(path) if path is not None else None
        self.index.clear(file)
        self._widest = 0
        self._judged = None
        if old is not None:
            old.close()  # its threads are told to stop; a read after this reads nothing (LogFile's lock)
        if file is not None:
            job = self._file_job = _Job()
            self.run_worker(partial(self._follow, file, job, ahead[1] if ahead is not None else None), thread=True,
                            group=f"log-file-{id(self)}", name="symmtui-log-index", exit_on_error=False)
        self._after_change()

    def _follow(self, file: LogFile, job: _Job, ahead: threading.Event | None = None) -> None:
        """The file thread: index, then follow (``log_file.follow``); each change is one message at a time.
        ``ahead``: set once the thread that began the index ahead is done with the file."""
        while ahead is not None and not ahead.wait(0.1):
            if job.stop.is_set():
                return
        def changed() -> None:
            if not job.posted.is_set() and not job.stop.is_set():
                job.posted.set()
                self.post_message(_FileChanged(file, job))

        def shown() -> None:  # the end of a big file is on screen before its head is filled in: the filling
            job.painted.wait(PAINT_WAIT)  # holds the GIL for most of a second and slowed that frame down by as much

        follow(file, job.stop, job.wake, changed, shown)
        if file.ended and not job.stop.is_set():
            job.posted.clear()
            changed()

    def poke(self) -> None:
        """The engine read more of the file: index what it gained now (not at the next once-a-second look)."""
        if self._file_job is not None:
            self._file_job.wake.set()

    def notice(self, kind: str) -> None:
        """A notice of the follower's: the file was truncated (start over), rotated or opened (look now)."""
        if kind == "truncated" and self.path is not None:
            self._reset_marks()
            self._note = "the log was truncated: read again from its first line"
            self._start_file(self.path)
        else:
            self.poke()

    def set_file(self, path: str | Path | None) -> None:
        """Show ``path``, keeping what was marked when it is the same file."""
        self.view_file(path, fresh=False)

    def reset(self, path: str | Path | None = None) -> None:
        """A new launch or file: forget every mark; the file is indexed again."""
        self.path = None
        self.view_file(path)

    def _reset_marks(self) -> None:
        self._cancel_jobs()
        self._lines.clear_cache()
        self._cursor = None
        self.error_position = 0
        self.new_lines = 0
        self._note = ""
        self._matches = array("Q")
        self._counted = not self._search
        self._pending_step = None
        self.filtering = self.judging = ""
        self._set_following(True)

    def _cancel_jobs(self, *names: str) -> None:
        for name in names or list(self._jobs):
            job = self._jobs.pop(name, None)
            if job is not None:
                job.cancel()

    @on(_FileChanged)
    def _file_changed(self, message: _FileChanged) -> None:
        message.stop()
        wait = self._taken + TAKE_GAP - time.monotonic()
        if wait > 0 and not message.file.ended:  # the file thread posts no other meanwhile (``posted`` stays set)
            self.set_timer(wait, partial(self._take, message))
        else:
            self._take(message)

    def _take(self, message: _FileChanged) -> None:
        self._taken = time.monotonic()
        message.job.posted.clear()
        if not message.job.painted.is_set():
            self.call_after_refresh(message.job.painted.set)
        file = message.file
        if file is not self.index.file:
            return  # an older generation's
        if file.ended:
            why = "truncated" if file.ended == "truncated" else "replaced by a new file"
            self._reset_marks()
            self._note = f"the log was {why}: read again from its first line"
            self._start_file(self.path)
            return
        self._after_change()

    def _after_change(self) -> None:
        """Take in what the file thread indexed: new rows, waiting marks; the scans hear of it."""
        index = self.index
        last_before = index.rows - 1
        added, changed = index.sync()
        lines = self._lines
        if added or changed:
            for job in self._jobs.values():
                job.wake.set()
            if changed:
                lines.clear_cache()
            if last_before >= 0:
                lines.discard_rows([last_before])  # it may have been still being written
            if not self.following:
                self.new_lines += added
            if self._search and not self._jobs.get("count") and index.file is not None:
                self._recount()
        file = index.file
        if file is not None and file.rows and not file.complete:
            lines.discard_rows([file.rows - 1])  # a line still being written (a progress bar) is drawn anew
        self._update_size()
        if self.following:
            self._scroll_end()
        lines.refresh()
        self._status.refresh()
        if self._pending_step is not None and not self._jobs.get("find"):
            self._retry_step()

    def _stable(self, row: int) -> bool:
        """Whether ``row``'s rendering may be cached (the last row of a file still being written may grow)."""
        file = self.index.file
        return file is None or row < file.rows - 1 or file.complete

    def _saw_width(self, cells: int) -> None:
        if cells > self._widest:
            self._widest = cells
            if not self.wrap:
                self.call_after_refresh(self._update_size)

    # ------------------------------------------------------------------ events
    def add_events(self, events: Sequence[EventLike]) -> None:
        """Mark rows from engine events (kind colours, block summaries and ranks, n/N stops) by their offsets."""
        if not events:
            return
        anchor = self._anchor()
        self._marked(self.index.add_events(events), anchor)

    def _anchor(self) -> tuple[bool, int] | None:
        """What the top line shows (a summary row: its block's start), to keep it there across new marks."""
        index = self.index
        if self.following or not index.view_len():
            return None
        is_summary, value = index.view_entry(min(int(self._lines.scroll_y), index.view_len() - 1))
        return (True, index.blocks[value].start) if is_summary else (False, value)

    def _marked(self, changed: list[int], anchor: tuple[bool, int] | None) -> None:
        """Rows were marked: redraw, with the same line at the top (copies folded above it, summaries added)."""
        if not changed:
            return
        self._lines.clear_cache()
        self._update_size()
        if self.following:
            self._scroll_end()
        elif anchor is not None:
            y = self.index.view_y(anchor[1], summary=anchor[0])
            if y is not None:
                self._programmatic = True
                try:
                    self._lines.scroll_to(y=y, animate=False, immediate=True, force=True)
                finally:
                    self._programmatic = False
        self._lines.refresh()
        self._status.refresh()

    # ------------------------------------------------------------------ actions
    def action_toggle_follow(self) -> None:
        """Pause following, or resume it (jumps to the end)."""
        self._set_following(not self.following)

    def action_toggle_errors(self) -> None:
        """Show only crash/warning lines and traceback blocks (of the whole file), or everything again."""
        on = not self.index.errors_only
        if on:
            self._judge()
        self._apply_filter(errors_only=on)

    def action_next(self) -> None:
        """n: the next search match while a search is on, else the next error."""
        self._step_match(forward=self._search_forward) if self._search else self.action_next_error()

    def action_previous(self) -> None:
        """N: the previous search match while a search is on, else the previous error."""
        self._step_match(forward=not self._search_forward) if self._search else self.action_previous_error()

    def action_next_error(self) -> None:
        """Select the next traceback block or crash/warning line (wraps around)."""
        self._judge()
        self._step_error(forward=True)

    def action_previous_error(self) -> None:
        """Select the previous traceback block or crash/warning line (wraps around)."""
        self._judge()
        self._step_error(forward=False)

    def action_search(self) -> None:
        """Open the search box (forward)."""
        self._prompt.open("search")

    def action_search_back(self) -> None:
        """Open the search box (backwards: Enter and n go up, as less's ``?``)."""
        self._prompt.open("search-back")

    def action_filter_in(self) -> None:
        """Ask for a regex: only the records it matches are shown (lnav's :filter-in)."""
        self._prompt.open("filter-in")

    def action_filter_out(self) -> None:
        """Ask for a regex: the records it matches are hidden (lnav's :filter-out)."""
        self._prompt.open("filter-out")

    def action_go_to(self) -> None:
        """Ask where to go: the command line with ``goto `` typed."""
        self._prompt.open("command")
        self._prompt.value = "goto "
        self._prompt.cursor_position = len(self._prompt.value)

    def action_command(self) -> None:
        """An lnav-style command line (``:goto 1``, ``:filter-in RE`` ...)."""
        self._prompt.open("command")

    def action_clear_filters(self) -> None:
        """Remove every regex filter (errors only stays as it is)."""
        if self.filters:
            self.filters = ()
            self._note = "filters cleared"
            self._apply_filter()

    def action_toggle_wrap(self) -> None:
        """Soft-wrap long lines to the pane's width (every character kept), or cut them again."""
        anchor = self._top_row()
        self.wrap = not self.wrap
        self._lines.scroll_x = 0
        self._lines.clear_cache()
        self._update_size()
        self._keep_place(anchor)
        self._status.refresh()

    def action_toggle_fold(self) -> None:
        """Fold the other ranks' copies of every traceback under its first occurrence, or unfold them."""
        anchor = self._top_row()
        self.index.set_folding(not self.index.folding)
        self._note = "copies folded" if self.index.folding else "copies unfolded"
        self._lines.clear_cache()
        self._update_size()
        self._keep_place(anchor)
        self._status.refresh()

    def action_close_search(self) -> None:
        """Close the prompt; a search's highlight goes with it (the last match stays selected)."""
        self._prompt.remove_class("-open")
        if self._prompt.mode.startswith("search") or self._search:
            self._prompt.value = ""
            self._set_search("")
        self._lines.focus()

    def action_next_match(self) -> None:
        """Select the next line the search matches."""
        self._step_match(forward=True)

    def action_previous_match(self) -> None:
        """Select the previous line the search matches."""
        self._step_match(forward=False)

    def go_to(self, where: str) -> bool:
        """Select the line ``where`` names (see ``log_goto``); the status line says what it found."""
        landing = log_goto.go_to(self.index, where)
        self._note = landing.note
        if landing.row is None:
            self._status.refresh()
            return False
        if not self.index.is_shown(landing.row) and self.index.filtered:
            self._note += " (hidden by a filter: showing the next line shown)"
        self._select(landing.row, summary=False)
        return True

    def add_filter(self, include: bool, pattern: str) -> bool:
        """Add a filter-in / filter-out regex; a bad one is a note, not an error."""
        try:
            rule = FilterRule.parse(include, pattern)
        except UserError as exc:
            self._note = str(exc)
            self._status.refresh()
            return False
        self.filters = (*[r for r in self.filters if r.chip != rule.chip], rule)
        self._note = ""
        self._apply_filter()
        return True

    # ------------------------------------------------------------------ scrolling keys
    def _scroll_by(self, lines: int) -> None:
        body = self._lines
        body.scroll_to(y=max(0, body.scroll_y + lines), animate=False, immediate=True)

    def _scroll_home(self) -> None:
        self._lines.scroll_home(animate=False, immediate=True, x_axis=False)

    # ------------------------------------------------------------------ prompt
    @on(Input.Changed, "LogSearch")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._prompt.mode.startswith("search"):
            self._set_search(event.value)

    @on(Input.Submitted, "LogSearch")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        mode, value = self._prompt.mode, event.value.strip()
        if mode.startswith("search"):
            self._set_search(event.value)
            self._search_forward = mode == "search"
            self._lines.focus()  # the pane takes the keys from here: n / N walk the matches
            self._step_match(forward=self._search_forward)
            return
        self._prompt.remove_class("-open")
        self._lines.focus()
        if mode == "command":
            word, _, rest = value.partition(" ")
            word = word.lower()
            if word in ("clear-filters", "unfilter", "clear"):
                self.action_clear_filters()
                return
            if word in ("wrap", "fold", "errors"):
                {"wrap": self.action_toggle_wrap, "fold": self.action_toggle_fold,
                 "errors": self.action_toggle_errors}[word]()
                return
            if word in ("filter-in", "filter-out"):
                mode, value = word, rest.strip()
            elif word in ("goto", "go"):
                mode, value = "goto", rest.strip()
            else:
                mode = "goto"  # ":1234", ":weights": vim's and lnav's bare go-to
        if mode in ("filter-in", "filter-out"):
            self.add_filter(mode == "filter-in", value)
        else:
            self.go_to(value)

    def _set_search(self, text: str) -> None:
        if text == self._search:
            return
        self._search = text
        self._note = ""
        self._rx = None
        if text:
            rx, is_regex = compile_search(text)
            self._rx = rx
            if not is_regex:
                self._note = "not a regex: searched as text"
        self._lines.clear_cache()
        self._lines.refresh()
        self._recount()
        self._status.refresh()

    def _recount(self) -> None:
        """Count the search's matches over the whole file again, on a thread; "3 of 41,200…" meanwhile."""
        self._cancel_jobs("count", "find")
        self._matches = array("Q")
        self._count_judged = 0
        self._counted = not self._search
        rx, file = self._rx, self.index.file
        if rx is None or file is None:
            self._counted = True
            return
        job = self._jobs["count"] = _Job()

        def work() -> None:
            for found in count(rx, file, job.wait, job.stop.is_set):
                self.post_message(_Scanned("count", job, found))

        self.run_worker(work, thread=True, group=f"log-count-{id(self)}", exit_on_error=False)

    @on(_Scanned)
    def _scanned(self, message: _Scanned) -> None:
        message.stop()
        if message.what == "export":
            if message.error:
                self.notify(message.error, severity="error", timeout=8)
            else:
                _zero, cut, where = message.marks[0]
                self.notify(f"{message.row or 0:,} lines{cut} written to {where}", timeout=8)
            return
        if self._jobs.get(message.what) is not message.job:
            return  # superseded
        if message.what == "count" and message.found is not None:
            self._matches.extend(message.found.rows)
            self._count_judged = message.found.judged
            self._counted = message.found.done
            if self._pending_step is not None:
                self._retry_step()
        elif message.what == "find":
            self._jobs.pop("find", None)
            self._landed(message.row)
        elif message.what == "keep" and message.found is not None:
            self._filter_found(message.found)
        elif message.what == "judge":
            self._judge_found(message)
        self._status.refresh()

    def _step_match(self, forward: bool) -> None:
        """The next (or previous) match from the selected line (or the screen), wrapping: at once where the
        count has judged the rows, else found by a scan of the file from there."""
        if self._rx is None:
            return
        self._cancel_jobs("find")
        self._pending_step = forward
        self._retry_step()

    def _retry_step(self) -> None:
        """The step asked for, from the count where it has judged that far (forward: the rows after the line;
        back: the rows before it), else from a scan of the file (``_find``, which wraps)."""
        forward = self._pending_step
        if forward is None or "find" in self._jobs:
            return
        index = self.index
        ref = self._cursor if self._cursor is not None and 0 <= self._cursor < index.rows else None
        start = ref if ref is not None else self._edge_row(top=forward) - (1 if forward else -1)
        found = self._matches
        if forward or self._count_judged > start:
            k = bisect_right(found, start) if forward else bisect_left(found, start) - 1
            for _ in range(10_000):  # the count's matches that way: the first one shown
                if not 0 <= k < len(found):
                    break
                if index.is_shown(found[k]):
                    self._landed(found[k])
                    return
                k += 1 if forward else -1
            if self._counted and not 0 <= k < len(found):  # none that way: wrap around
                wrap = next((r for r in (found if forward else reversed(found)) if index.is_shown(r)), None)
                self._landed(wrap, wrapped=wrap is not None)
                return
        self._find(forward, start + (1 if forward else -1))

    def _find(self, forward: bool, start: int) -> None:
        rx, file = self._rx, self.index.file
        if rx is None or file is None:
            return
        self._cancel_jobs("find")
        job = self._jobs["find"] = _Job()
        hidden = self.index.hidden_ranges()
        frows = self.index._frows
        shown = partial(_shown_in, hidden, array("Q", frows) if frows is not None else None)
        self._note = f"searching for {self._search!r}…"

        def work() -> None:
            row = find(rx, file, max(0, start), forward, shown, job.stop.is_set)
            if not job.stop.is_set():
                self.post_message(_Scanned("find", job, row=row))

        self.run_worker(work, thread=True, group=f"log-find-{id(self)}", exit_on_error=False)

    def _landed(self, row: int | None, *, wrapped: bool = False) -> None:
        self._pending_step = None
        self._cancel_jobs("find")
        if row is None:
            self._note = f"no match for {self._search!r}"
            self._status.refresh()
            return
        self._note = f"match at line {row + 1:,}" + (" (wrapped)" if wrapped else "")
        self._select(row, summary=False, record=True)

    # ------------------------------------------------------------------ export
    def export(self, path: Path) -> None:
        """Write the lines the pane shows (its filters and folds applied, summary rows as ``▶ ...``) to ``path``
        on a thread (atomically, 0600); a toast says where, or why not."""
        index = self.index
        file = index.file
        if file is None:
            self.notify("no log to export", severity="warning")
            return
        frows = array("Q", index._frows) if index._frows is not None else None
        hidden = index.hidden_ranges()
        heads = {b.start: index.block_summary(b) for b in index.blocks if not b.folded}
        rows = index.rows
        job = _Job()

        def work() -> None:
            try:
                written = _write_view(path, file, rows, frows, hidden, heads)
            except OSError as exc:
                self.post_message(_Scanned("export", job, error=f"export failed: {path}: {exc.strerror or exc}"))
                return
            cut = f" (the first {MAX_EXPORT:,})" if written >= MAX_EXPORT else ""
            self.post_message(_Scanned("export", job, error="", row=written, events=(),
                                       marks=((0, cut, str(path)),)))

        self.run_worker(work, thread=True, group=f"log-export-{id(self)}", exit_on_error=False)

    # ------------------------------------------------------------------ filters
    def _apply_filter(self, *, errors_only: bool | None = None) -> None:
        """Show what errors-only and the regex filters keep; the regexes are judged on a thread, over the file."""
        errors = self.index.errors_only if errors_only is None else errors_only
        self._cancel_jobs("keep")
        anchor = self._top_row()
        if not self.filters:
            self.filtering = ""
            self.index.set_filter(errors, None)
            self._refiltered(anchor)
            return
        file = self.index.file
        if file is None:
            return
        self.index.set_filter(errors, array("Q"))
        self.filtering = "filtering…"
        self._refiltered(anchor)
        rules = self.filters
        blocks = self.index.block_ranges()
        job = self._jobs["keep"] = _Job()

        def work() -> None:
            for found in keep(rules, file, blocks, job.wait, job.stop.is_set):
                self.post_message(_Scanned("keep", job, found))

        self.run_worker(work, thread=True, group=f"log-keep-{id(self)}", exit_on_error=False)

    def _filter_found(self, found: Found) -> None:
        self.index.add_kept(found.rows)
        rows = max(self.index.rows, 1)
        self.filtering = "" if found.done else f"filtering… {min(found.judged / rows, 1) * 100:.0f}%"
        self._update_size()
        if self.following:
            self._scroll_end()
        self._lines.refresh()

    def _refiltered(self, anchor: int | None) -> None:
        self._lines.clear_cache()
        self._keep_place(anchor)
        self._lines.refresh()
        self._status.refresh()

    def _top_row(self) -> int | None:
        """The row to keep in place across a change of the view: the cursor's, else the top row."""
        return self._cursor if self._cursor is not None else self.index.nearest_row(int(self._lines.scroll_y))

    def _keep_place(self, anchor: int | None) -> None:
        self._programmatic = True
        try:
            self._update_size()
            if self.following:
                self._scroll_end()
            elif anchor is not None:
                self._scroll_near(anchor, top=True)
        finally:
            self._programmatic = False
        self._lines.refresh()

    # ------------------------------------------------------------------ errors
    def _judge(self) -> None:
        """Judge the whole file for errors on a thread, once per file (the engine judged its end only)."""
        file = self.index.file
        if file is None or self._judged is file:
            return
        self._judged = file
        self.judging = "judging the file for errors…"
        self._status.refresh()
        job = self._jobs["judge"] = _Job()

        def work() -> None:
            for found, marks, judged, done in _judge_file(file, job):
                self.post_message(_Scanned("judge", job, Found([], judged, done), events=found, marks=marks))

        self.run_worker(work, thread=True, group=f"log-judge-{id(self)}", exit_on_error=False)

    def _judge_found(self, message: _Scanned) -> None:
        if self._judged is not self.index.file:
            return
        found = message.found
        if message.events or message.marks:
            anchor = self._anchor()
            changed = self.index.add_events(message.events, more=False)
            self._marked(changed + self.index.mark_rows(message.marks), anchor)
        if found is not None:
            rows = max(self.index.rows, 1)
            self.judging = "" if found.done else \
                f"judging the file for errors… {min(found.judged / rows, 1) * 100:.0f}%"
            if found.done:
                self._jobs.pop("judge", None)
            self._lines.refresh()  # an empty view says why: still judging, or no errors

    def _step_error(self, forward: bool) -> None:
        index = self.index
        targets = [t for t in index.targets if index.is_shown(t)] if index.filtered else index.targets
        if not targets:
            self._note = "no errors" + (" yet (judging the file…)" if self.judging else "")
            self._status.refresh()
            return
        if self._cursor is not None and 0 <= self._cursor < index.rows:
            ref = self._cursor
        else:
            ref = self._edge_row(top=forward) + (-1 if forward else 1)
        if forward:
            i = bisect_right(targets, ref)
            i = 0 if i >= len(targets) else i
        else:
            i = bisect_left(targets, ref) - 1
            i = len(targets) - 1 if i < 0 else i
        row = targets[i]
        self.error_position = i + 1
        summary = index.target_summary(row)
        self._note = ""
        self._select(row, summary=True)
        self.post_message(self.ErrorSelected(self, index.no_for_row(row), summary))

    # ------------------------------------------------------------------ internals
    def _edge_row(self, *, top: bool) -> int:
        """The row at the top (or bottom) of the screen; 0 / the last row when empty."""
        lines = self._lines
        y = int(lines.scroll_y) if top else int(lines.scroll_y) + max(lines.size.height - 1, 0)
        row = self.index.nearest_row(y)
        if row is None:
            return 0 if top else max(self.index.rows - 1, 0)
        return row

    def _select(self, row: int, *, summary: bool, record: bool = False) -> None:
        self._cursor = row
        if self.following:
            self._set_following(False)
        self._programmatic = True
        try:
            self._scroll_near(row, top=False, summary=summary)
            if record:
                self._show_record(row)
        finally:
            self._programmatic = False
        self._lines.refresh()
        self._status.refresh()

    def _show_record(self, row: int) -> None:
        """A match inside a record (a traceback, a message of several lines): its first line on screen too."""
        file = self.index.file
        if file is None:
            return
        first, _last = Records(file, self.index.block_ranges()).extent(row)
        top, here = self.index.view_y(first), self.index.view_y(row)
        lines = self._lines
        height = max(lines.size.height, 1)
        if top is not None and here is not None and here - top < height and top < lines.scroll_y:
            lines.scroll_to(y=top, animate=False, immediate=True, force=True)

    def _scroll_near(self, row: int, *, top: bool, summary: bool = False) -> None:
        vy = self.index.view_y(row, summary=summary)
        if vy is None:
            vy = self._nearest_view_y(row)
        lines = self._lines
        height = max(lines.size.height, 1)
        scroll_y = int(lines.scroll_y)
        if top:
            lines.scroll_to(y=vy, animate=False, immediate=True, force=True)
        elif not scroll_y <= vy < scroll_y + (1 if self.wrap else height):
            # in wrap mode the top line is the one scrolled to (its pieces fill the screen downwards)
            lines.scroll_to(y=max(0, vy - (0 if self.wrap else height // 3)), animate=False, immediate=True,
                            force=True)

    def _nearest_view_y(self, row: int) -> int:
        """For a row hidden by the filter: the view line of the next shown row."""
        index = self.index
        for shown in index.view_rows(row, True):
            y = index.view_y(shown)
            if y is not None:
                return y
        return max(index.view_len() - 1, 0)

    def _update_size(self) -> None:
        file = self.index.file
        widest = max(self._widest, (file.widest if file is not None else 0) + _GUTTER + 1)
        width = 1 if self.wrap else widest
        self._lines.set_virtual_size(Size(width, self.index.view_len()))

    def _scroll_end(self) -> None:
        if not self._lines.is_mounted:
            return  # before the pane is on screen: on_resize scrolls once it has a size
        self._programmatic = True
        try:
            self._lines.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        finally:
            self._programmatic = False

    def _set_following(self, following: bool, *, scroll: bool = True) -> None:
        changed = following != self.following
        self.following = following
        if following:
            self.new_lines = 0
            self._cursor = None
            self.error_position = 0
            if scroll:
                self._scroll_end()
            self._lines.refresh()
        if changed:
            self.post_message(self.FollowChanged(self, following))
        self._status.refresh()

    def _scrolled(self, old: float, new: float) -> None:
        """The body scrolled: at the end resumes following, a user scroll up pauses it."""
        if self._programmatic:
            return
        if new >= self._lines.max_scroll_y:
            if new > old and not self.following:  # not a clamp (the pane grew: a prompt closed)
                self._set_following(True, scroll=False)
        elif new < old and self.following:
            self._set_following(False)


def _shown_in(hidden: list[tuple[int, int]], frows: array[int] | None, row: int) -> bool:
    """Whether ``row`` is shown, by a snapshot of the view (a worker's: the folds and the filter's rows)."""
    k = bisect_right(hidden, (row, 1 << 62)) - 1
    if k >= 0 and hidden[k][0] <= row <= hidden[k][1]:
        return False
    if frows is None:
        return True
    k = bisect_left(frows, row)
    return k < len(frows) and frows[k] == row


def _write_view(path: Path, file: LogFile, rows: int, frows: array[int] | None, hidden: list[tuple[int, int]],
                heads: dict[int, str]) -> int:
    """Write the view (a snapshot) to ``path`` atomically: a temp file beside it, renamed over it."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=fsatomic.TEMP_SUFFIX, dir=path.parent)
    temp = Path(name)
    written = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for row, text in _view_texts(file, rows, frows, hidden):
                if row in heads:
                    out.write(f"▶ {visible(heads[row])}\n")
                    written += 1
                out.write(visible(text) + "\n")
                written += 1
                if written >= MAX_EXPORT:
                    break
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    fsatomic.commit(temp, path)
    return written


def _view_texts(file: LogFile, rows: int, frows: array[int] | None,
                hidden: list[tuple[int, int]]) -> Iterator[tuple[int, str]]:
    if frows is not None:
        for row in frows:
            yield row, file.text(row)
        return
    row = 0
    for a, b in [*hidden, (rows, rows)]:
        if a > row:
            yield from file.texts(row, a)
        row = max(row, b + 1)


def _judge_file(file: LogFile, job: _Job) -> Iterator[tuple[list[EventLike], list[tuple[int, str, str]], int, bool]]:
    """Feed the whole file to the engine's event builder (the shipped rules) in batches: each batch's events (the
    latest of each key) and the rows of one-line events seen more often than the builder keeps spans of (found
    by their text: ``(offset, kind, summary)``), the rows judged, and whether it is done."""
    builder = EventBuilder()
    rows = file.rows
    for lo in range(0, rows, _JUDGE_ROWS):
        if job.stop.is_set():
            return
        hi = min(rows, lo + _JUDGE_ROWS)
        lines = [LogLine(row + 1, file.starts[row], text, text) for row, text in file.texts(lo, hi)]
        latest = {(ev.key, ev.offset): ev for ev in builder.feed_many(lines)}
        marks: list[tuple[int, str, str]] = []
        for ev in latest.values():
            if ev.kind in ("crash", "warning") and ev.count > MAX_SPANS and all(a == b for a, b in ev.offsets):
                body = ev.summary.rstrip("…")
                marks += [(line.offset, str(ev.kind), ev.summary) for line in lines if body and body in line.plain]
        yield list(latest.values()), marks, hi, False
    yield list(builder.flush()), [], rows, True
