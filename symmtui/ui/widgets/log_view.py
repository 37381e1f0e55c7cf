"""The dashboard's log pane: a windowed Line API view that follows, colours, folds, filters, searches and wraps a log.

Use (the dashboard):

    log = LogView(id="log")                 # compose it; it fills what it is given
                                            # (ring=20_000 lines of text kept, max_rows=5_000_000 indexed)
    log.reset(path)                         # new launch / new file: clears, and reads old lines back from `path`
    log.set_file(path)                      # only change the file old lines are read back from (os.pread)
    log.append_lines(update.lines)          # on the UI thread, batches of LogLine (O(batch))
    log.add_events(update.events)           # the engine's events: row colours, blocks from their spans, n/N stops

Keys (bindings on the widget, each with a tooltip the help screen shows): f follow on/off, / search (Enter:
the first match, then n / N walk the matches and the status line says "3 of 17"; Escape closes), e errors
only, n / N the next / previous match while a search is on, else error, ] / [ next / previous error, i / x
filter in / out by regex (lnav's :filter-in / :filter-out; a chip each with the hidden count), X clears the
regex filters, w soft wrap, z fold / unfold the other ranks' copies of a traceback, g go to a line, a log
time, a time since the first line or a phase (`log_goto`), : an lnav-style command line. Each is a public
action the app may call from its own bindings; `LogView.commands()` gives them as command palette entries.

Messages: `LogView.FollowChanged(following)` when following pauses or resumes,
`LogView.ErrorSelected(line_no, summary)` when n/N lands on an error.
State for tests and the app: `following`, `new_lines`, `errors_only`, `filters`, `wrap`, `search_text`,
`match_position()`, `error_count`, `line_count`, `cursor_line_no`, `visible_lines()` (the text on screen).

What it shows: each line behind a two-cell gutter (`┃` on crash/warning/traceback lines, `▸` on the
selected error or match); a traceback as one block under a summary row, the other ranks' identical copies
folded into it (`▶ KeyError: 12 at torch_symm_mem.py:83 ×8 ranks (7 copies folded: z)`); a carriage-return
progress bar updated in place; a status line (`● following` or `❚❚ paused — N new lines`, the search's
position, errors, filter chips and what they hide, wrap, line count). An empty filtered view says why
("no errors in 1,234 lines").

Colours come only from component classes (`log-view--crash`, `--warning`, `--ready`, `--phase`,
`--progress`, `--info`, `--summary`, `--match`, `--cursor`, `--gutter`, `--dim`,
`--status-following`, `--status-paused`, `--status-note`, `--status-chip`), whose defaults use Textual's theme
variables; the app may restyle them, e.g. `LogView .log-view--crash { color: $log-crash; }`. Rendered strips
are cached and the cache is dropped whenever styles or the theme change.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input

from symmtui.core.logclock import LogTimes
from symmtui.textsafe import visible
from symmtui.ui.widgets import log_goto
from symmtui.ui.widgets.log_filters import MAX_MATCHES, FilterRule, ViewFilter, build, count_matches, matches
from symmtui.ui.widgets.log_index import (
    BLOCK_END,
    CRASH,
    ERRORISH,
    INFO,
    KIND_MASK,
    PHASE,
    PROGRESS,
    READY,
    TRUNCATED,
    WARNING,
    EventLike,
    Keep,
    LineIndex,
    LineLike,
    errors_filter,
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
_SEARCH_SLICE = 0.01  # seconds of searching between two turns of the event loop
MAX_EXPORT = 1_000_000  # lines an export writes at most


def _clean(text: str) -> str:
    """Tabs expanded; control characters and escape sequences shown as text (``\\x1b]0;...``) by the
    one sanitiser, never passed to the terminal (the pane shows the ANSI-free ``plain`` text)."""
    if "\t" in text:
        text = text.expandtabs(8)
    return visible(text)


class LogLines(ScrollView, can_focus=True):
    """The scrolling body of a `LogView`: renders view lines from the index, one `Strip` each."""

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

    def __init__(self, owner: LogView, index: LineIndex) -> None:
        super().__init__()
        self._owner = owner
        self._index = index
        self._cache: LRUCache[tuple[str, int, bool], Strip] = LRUCache(1024)
        self._version = 0  # bumped whenever a cached strip is dropped (the wrap layout follows it)
        self._layout_key: tuple[int, ...] | None = None
        self._layout: list[Strip] = []

    # -- size: new lines change the virtual size, never the pane's own; no layout for them
    def set_virtual_size(self, size: Size) -> None:
        """Set the scrollable size. Once laid out, only the scrollbars and scroll limits follow it: the
        pane's region does not depend on it, so a layout of the screen (a reflow of every widget) per
        batch of lines would change nothing. A horizontal scrollbar appearing or going (the vertical one
        always shows: overflow-y scroll) still asks for one, through the reactive."""
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
        # only the scrollbar whose extent changed repaints (ScrollView's own update repaints both)
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
        self._cache.clear()
        self._version += 1

    def clear_cache(self) -> None:
        """Drop every rendered strip."""
        self._cache.clear()
        self._version += 1

    def discard_rows(self, rows: Sequence[int]) -> None:
        """Drop the rendered strips of `rows` (replaced or re-marked)."""
        self._version += 1
        for row in rows:
            self._cache.discard(("r", row, False))
            self._cache.discard(("r", row, True))

    # -- scrolling
    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._owner._scrolled(old_value, new_value)

    def on_resize(self) -> None:
        if self._owner.wrap:
            self._owner._update_size()
        if self._owner.following:
            self._owner._scroll_end()

    # -- rendering
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
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
        """Below the last line: blank; on an empty filtered view's first line, why it is empty."""
        index = self._index
        if y != 0 or index.view_len() or not index.filtered or not index.rows:
            return Strip.blank(width, base)
        why = self._owner.empty_reason()
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
                out[:0] = self._pieces(vy, width, base)
                vy -= 1
            if len(out) >= height or vy >= 0:
                out = out[-height:]
            else:
                top = 0
                out = []
        if not out:
            vy = top
            while vy < total and len(out) < height:
                out += self._pieces(vy, width, base)
                vy += 1
            out = out[:height]
        if not total:
            out = [self._empty_line(0, width, base)]
        self._layout_key, self._layout = key, out
        return out

    def _pieces(self, vy: int, width: int, base: Style) -> list[Strip]:
        strip, pad = self._full_strip(vy, base)
        room = max(1, width - _GUTTER)
        if strip.cell_length <= width:
            return [strip.extend_cell_length(width, pad)]
        gutter = strip.crop(0, _GUTTER)
        body = strip.crop(_GUTTER, strip.cell_length)
        blank = Strip([Segment(" " * _GUTTER, pad)])
        out = []
        for start in range(0, body.cell_length, room):
            piece = body.crop(start, start + room)
            out.append(Strip.join([gutter if start == 0 else blank, piece]).extend_cell_length(width, pad))
        return out

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
            self._cache[key] = strip
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
        marker = "▶ "
        text = f"{marker}{_clean(self._index.block_summary(block))}"
        return Strip([Segment(text, style)])

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
        needle = self._owner._needle
        if needle:
            segments.extend(self._split_matches(text, needle, style))
        else:
            segments.append(Segment(text, style))
        if flags & TRUNCATED:
            segments.append(Segment(" …(line cut)", self._style("log-view--dim")))
        return Strip(segments)

    def _split_matches(self, text: str, needle: str, style: Style) -> list[Segment]:
        hay = text.lower() if needle == needle.lower() else text
        match_style = style + self._style("log-view--match")
        out: list[Segment] = []
        pos = 0
        n = len(needle)
        hit = hay.find(needle)
        while hit >= 0:
            if hit > pos:
                out.append(Segment(text[pos:hit], style))
            out.append(Segment(text[hit : hit + n], match_style))
            pos = hit + n
            hit = hay.find(needle, pos)
        if pos < len(text):
            out.append(Segment(text[pos:], style))
        return out


class LogSearch(Input):
    """The pane's prompt: search (Enter: next match, Up/Down: previous/next), a filter in or out, a go-to, or an
    lnav-style command (``:filter-in RE``, ``:filter-out RE``, ``:goto WHERE``, ``:clear-filters``); Escape closes."""

    BINDINGS = [
        Binding("escape", "close", "Close", show=False),
        Binding("down", "step(True)", "Next match", show=False),
        Binding("up", "step(False)", "Previous match", show=False),
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
        "search": "search the log (Enter: next match, then n/N; Escape: close)",
        "filter-in": "filter in: show only lines matching this regex (Enter: apply; X clears filters)",
        "filter-out": "filter out: hide lines matching this regex (Enter: apply; X clears filters)",
        "goto": log_goto.HELP,
        "command": "filter-in RE · filter-out RE · clear-filters · goto WHERE · wrap · fold",
    }

    def __init__(self, owner: LogView) -> None:
        # compact: Input's own `:focus { border: tall }` would otherwise eat the one text row
        super().__init__(placeholder=self.PLACEHOLDERS["search"], compact=True)
        self._owner = owner
        self.mode = "search"

    def open(self, mode: str) -> None:
        """Show the prompt in ``mode`` and focus it (a search keeps its text; the others start empty)."""
        if mode != self.mode or mode != "search":
            self.value = ""
        self.mode = mode
        self.placeholder = self.PLACEHOLDERS[mode]
        self.add_class("-open")
        self.focus()

    def action_close(self) -> None:
        self._owner.action_close_search()

    def action_step(self, forward: bool) -> None:
        if self.mode == "search":
            self._owner.action_next_match() if forward else self._owner.action_previous_match()


class LogStatus(Widget):
    """The one-line state of a `LogView`: following or paused, errors, search position, filter chips, wrap."""

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

    def render(self) -> Text:
        """What matters most first, so a narrow pane cuts the least: following, the search, the last key's
        note, the filters and wrap, then the counts."""
        owner = self._owner
        note_style = self.get_component_rich_style("log-view--status-note")
        chip_style = self.get_component_rich_style("log-view--status-chip")
        text = Text(no_wrap=True, overflow="ellipsis")
        if owner.following:
            text.append(" ● following", self.get_component_rich_style("log-view--status-following"))
        else:
            new = owner.new_lines
            paused = f" ❚❚ paused — {new:,} new line{'s' if new != 1 else ''}" if new else " ❚❚ paused"
            text.append(paused, self.get_component_rich_style("log-view--status-paused"))
            text.append(" (f: follow)")
        if owner.search_text:  # "/shard/ 3 of 17"
            text.append(" · ")
            text.append(f"/{owner.search_text}/ {owner.match_position()}", note_style)
        if owner._note:  # what the last key did
            text.append(f" · {owner._note}", note_style)
        if owner.errors_only:
            text.append(" · errors only (e)", note_style)
        for rule in owner.filters:
            text.append(" ")
            text.append(f" {rule.chip} ", chip_style)
        if owner.filtering:
            text.append(f" {owner.filtering}", note_style)
        elif owner.filters or owner.errors_only:
            hidden = owner.hidden_count
            text.append(f" {hidden:,} hidden" + (" (X clears)" if owner.filters else ""))
        if owner.wrap:
            text.append(" · wrap (w)", note_style)
        # counts are the engine's events (a traceback from 8 ranks is one); n/N walks every marked line
        crashes, warnings = len(owner.index.crash_events), len(owner.index.warning_events)
        if crashes:
            text.append(f" · {crashes:,} error{'s' if crashes != 1 else ''}")
        if warnings:
            text.append(f" · {warnings:,} warning{'s' if warnings != 1 else ''}")
        stops = owner.error_count
        if owner.error_position:
            text.append(f" · mark {owner.error_position}/{stops}")
        elif stops and not (crashes or warnings):
            text.append(f" · {stops:,} marked line{'s' if stops != 1 else ''}")
        lines = owner.index.last_no
        text.append(f" · {lines:,} line{'s' if lines != 1 else ''}")
        return text


class LogView(Vertical):
    """The log pane; see the module docstring for the API."""

    BINDINGS = [
        Binding("f", "toggle_follow", "Follow", tooltip="Follow the end of the log, or pause"),
        Binding("slash", "search", "Find", key_display="/", tooltip="Search the log"),
        Binding("e", "toggle_errors", "Errors", tooltip="Show only crash and warning lines"),
        Binding("n", "next", "Next", tooltip="Next search match (while a search is on), else the next error"),
        Binding("N", "previous", "Prev", key_display="N",
                tooltip="Previous search match (while a search is on), else the previous error"),
        Binding("right_square_bracket", "next_error", "Next error", key_display="]", show=False),
        Binding("left_square_bracket", "previous_error", "Previous error", key_display="[", show=False),
        Binding("i", "filter_in", "Filter in", show=False, tooltip="Show only lines matching a regex"),
        Binding("x", "filter_out", "Filter out", show=False, tooltip="Hide lines matching a regex"),
        Binding("X", "clear_filters", "Clear filters", key_display="X", show=False),
        Binding("w", "toggle_wrap", "Wrap", show=False, tooltip="Soft-wrap long lines, or cut them"),
        Binding("z", "toggle_fold", "Fold", show=False, tooltip="Fold other ranks' copies of a traceback"),
        Binding("g", "go_to", "Go to", show=False, tooltip="Go to a line, a log time or a phase"),
        Binding("colon", "command", "Command", key_display=":", show=False),
        Binding("escape", "close_search", "Close search", show=False),
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
        """n/N landed on an error: its line number (1-based, as in the file) and summary."""

        def __init__(self, log_view: LogView, line_no: int, summary: str) -> None:
            super().__init__()
            self.log_view = log_view
            self.line_no = line_no
            self.summary = summary

        @property
        def control(self) -> LogView:
            return self.log_view

    def __init__(
        self,
        *,
        ring: int = 20_000,
        max_rows: int = 5_000_000,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.index = LineIndex(ring=ring, max_rows=max_rows)
        self.following = True
        self.new_lines = 0
        self.error_position = 0
        self.wrap = False
        self.filters: tuple[FilterRule, ...] = ()
        self.filtering = ""  # "filtering…" while a filter's rows are being judged
        self._errors_only = False
        self._filter_run = 0
        self._cursor: int | None = None
        self._needle = ""
        self._matches: array[int] | None = None  # rows the search matches (None: still counting)
        self._note = ""
        self._programmatic = False
        self._search_run = 0  # bumped to cancel a search still scanning the file
        self._first_stamp: float | None = None
        self._last_stamp: tuple[float, float] | None = None  # (log time, time.monotonic() it arrived)
        self._lines = LogLines(self, self.index)
        self._search = LogSearch(self)
        self._status = LogStatus(self)

    def compose(self) -> ComposeResult:
        yield self._lines
        yield self._search
        yield self._status

    def on_unmount(self) -> None:
        self.index.close_file()

    # ------------------------------------------------------------------ public state
    @property
    def lines(self) -> LogLines:
        """The scrolling body (what has focus)."""
        return self._lines

    @property
    def line_count(self) -> int:
        """Rows kept (after progress updates merged in place)."""
        return self.index.rows

    @property
    def error_count(self) -> int:
        """Stops for n/N: traceback blocks and crash/warning lines."""
        return len(self.index.targets)

    @property
    def errors_only(self) -> bool:
        """Whether the errors-only filter is on."""
        return self._errors_only

    @property
    def search_text(self) -> str:
        """The highlighted search text ('' when no search)."""
        return self._needle

    @property
    def hidden_count(self) -> int:
        """Rows the filters hide."""
        return self.index.rows - self.index._shown() if self.index.filtered else 0

    @property
    def cursor_line_no(self) -> int | None:
        """Line number of the selected error or match, if any."""
        if self._cursor is None or not self.index.base <= self._cursor < self.index.end:
            return None
        return self.index.no_for_row(self._cursor)

    def match_position(self) -> str:
        """``3 of 17`` (the selected match among all), ``17 matches``, ``counting…`` or ``no match``."""
        found = self._matches
        if found is None:
            return "counting…"
        total = len(found)
        more = "+" if total >= MAX_MATCHES else ""
        if not total:
            return "no match"
        cursor = self._cursor
        if cursor is not None:
            k = bisect_left(found, cursor)
            if k < total and found[k] == cursor:
                return f"{k + 1:,} of {total:,}{more}"
        return f"{total:,}{more} match{'es' if total != 1 else ''}"

    def empty_reason(self) -> str:
        """Why a filtered view is empty (shown on its first line)."""
        if self.filtering:
            return self.filtering
        if self._errors_only and not self.filters:
            return f"no errors in {self.index.last_no:,} lines (e shows everything)"
        return "no line passes the filters (X clears the regex filters, e the errors-only one)"

    def log_times(self) -> LogTimes:
        """The log's own clock as the pane saw it: its first and latest stamped line, and when that arrived."""
        last, seen = self._last_stamp if self._last_stamp is not None else (None, None)
        return LogTimes(self._first_stamp, last, seen)

    def _stamps(self, lines: Sequence[LineLike]) -> None:
        """Keep the first and the latest stamped line's log time (a few lines of a batch are read, not all)."""
        if self._first_stamp is None:
            self._first_stamp = next((ts for line in lines[:50] if (ts := log_goto.stamp_of(line.plain)) is not None),
                                     None)
        for line in reversed(lines[-20:]):
            ts = log_goto.stamp_of(line.plain)
            if ts is not None:
                self._last_stamp = (ts, time.monotonic())
                return

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
            SystemCommand("Log: filter in…", "Show only the lines a regex matches (i; lnav's :filter-in)",
                          self.action_filter_in),
            SystemCommand("Log: filter out…", "Hide the lines a regex matches (x; lnav's :filter-out)",
                          self.action_filter_out),
            SystemCommand("Log: clear filters", "Remove every regex filter (X)", self.action_clear_filters),
            SystemCommand("Log: soft wrap on/off", "Wrap long lines, or cut them (w)", self.action_toggle_wrap),
            SystemCommand("Log: fold tracebacks on/off", "Fold the other ranks' copies of a traceback (z)",
                          self.action_toggle_fold),
            SystemCommand("Log: go to…", "A line, a log time (09:47:20, +8m01s) or a phase (g)", self.action_go_to),
        ]
        for name, no in self._phase_starts():
            cmds.append(SystemCommand(f"Log: go to {name}", f"The first line of {name} (line {no:,})",
                                      partial(self.go_to, name)))
        return cmds

    def _phase_starts(self) -> list[tuple[str, int]]:
        seen: dict[str, int] = {}
        for name, no in self.index.phases:
            seen.setdefault(name, no)
        return list(seen.items())

    # ------------------------------------------------------------------ feeding
    def reset(self, path: str | Path | None = None) -> None:
        """A new launch or file: forget every line and error; old lines read back from `path`."""
        self._search_run += 1
        self.index.clear()
        self.index.set_file(path)
        self._lines.clear_cache()
        self._cursor = None
        self.error_position = 0
        self.new_lines = 0
        self._note = ""
        self._matches = array("Q") if self._needle else None
        self._first_stamp = self._last_stamp = None
        self._update_size()
        self._set_following(True)
        self._lines.refresh()
        self._status.refresh()

    def set_file(self, path: str | Path | None) -> None:
        """The file whose byte offsets the lines carry (read back with pread once out of memory)."""
        self.index.set_file(path)
        self._lines.clear_cache()
        self._lines.refresh()

    def append_lines(self, lines: Sequence[LineLike]) -> None:
        """Add a batch of lines (call on the UI thread; cost is O(batch), nothing renders off screen)."""
        if not lines:
            return
        lines_widget = self._lines
        anchor: tuple[bool, int] | None = None
        if not self.following and self.index.view_len():
            anchor = self.index.view_entry(min(int(lines_widget.scroll_y), self.index.view_len() - 1))
            if anchor[0]:
                anchor = (True, self.index.blocks[anchor[1]].start)
        shown_before = self.index.view_len()
        end_before = self.index.end
        result = self.index.append(lines)
        if result.restart_at is not None:
            # the follower started the file over (truncated or replaced): old rows no longer match it
            self.reset(self.index.path)
            self.append_lines(lines[result.restart_at :])
            return
        self._stamps(lines)
        if self._needle and self._matches is not None and len(self._matches) < MAX_MATCHES:
            index = self.index
            for row in range(max(end_before, index.base), index.end):
                if matches(self._needle, index.text(row)) and index.is_shown(row):
                    self._matches.append(row)
        if result.blocks_changed or result.pruned:
            lines_widget.clear_cache()
        elif result.replaced:
            lines_widget.discard_rows(result.replaced)
        if not self.following:
            self.new_lines += result.added
        self._update_size()
        if self.following:
            self._scroll_end()
        elif anchor is not None and (result.inserted or result.pruned or result.blocks_changed):
            # summary rows appeared above, or old rows were dropped: keep the same line at the top
            vy = self.index.view_y(anchor[1], summary=anchor[0])
            if vy is not None:
                self._programmatic = True
                try:
                    lines_widget.scroll_to(y=vy, animate=False, immediate=True, force=True)
                finally:
                    self._programmatic = False
        if (
            self.following
            or result.replaced
            or result.blocks_changed
            or result.pruned
            or shown_before < lines_widget.scroll_offset.y + lines_widget.size.height
        ):
            lines_widget.refresh()  # a paused pane whose lines did not change is left alone
        self._status.refresh()

    def add_events(self, events: Sequence[EventLike]) -> None:
        """Mark lines from engine events (kind colours, block summaries and ranks, n/N stops)."""
        if not events:
            return
        anchor = None if self.following else self.index.nearest_row(int(self._lines.scroll_y))
        changed = self.index.add_events(events)
        if changed:
            self._lines.clear_cache()
            self._update_size()
            if self.following:
                self._scroll_end()
            elif anchor is not None:  # copies folded above: keep the same line at the top
                self._scroll_near(anchor, top=True)
            self._lines.refresh()
            self._status.refresh()

    # ------------------------------------------------------------------ actions
    def action_toggle_follow(self) -> None:
        """Pause following, or resume it (jumps to the end)."""
        self._set_following(not self.following)

    def action_toggle_errors(self) -> None:
        """Show only crash/warning lines and traceback blocks, or everything again."""
        self._errors_only = not self._errors_only
        if self._errors_only and not self.index.targets and not self.index.blocks:
            self._note = "no errors"
        self._apply_filter()

    def action_next(self) -> None:
        """n: the next search match while a search is on, else the next error."""
        self.action_next_match() if self._needle else self.action_next_error()

    def action_previous(self) -> None:
        """N: the previous search match while a search is on, else the previous error."""
        self.action_previous_match() if self._needle else self.action_previous_error()

    def action_next_error(self) -> None:
        """Select the next traceback block or crash/warning line (wraps around)."""
        self._step_error(forward=True)

    def action_previous_error(self) -> None:
        """Select the previous traceback block or crash/warning line (wraps around)."""
        self._step_error(forward=False)

    def action_search(self) -> None:
        """Open the search box."""
        self._search.open("search")

    def action_filter_in(self) -> None:
        """Ask for a regex: only the lines it matches are shown (lnav's :filter-in)."""
        self._search.open("filter-in")

    def action_filter_out(self) -> None:
        """Ask for a regex: the lines it matches are hidden (lnav's :filter-out)."""
        self._search.open("filter-out")

    def action_go_to(self) -> None:
        """Ask where to go: a line, a log time, a time since the first line, or a phase."""
        self._search.open("goto")

    def action_command(self) -> None:
        """An lnav-style command line (``:filter-in RE`` ...)."""
        self._search.open("command")

    def action_clear_filters(self) -> None:
        """Remove every regex filter (errors only stays as it is)."""
        if self.filters:
            self.filters = ()
            self._note = "filters cleared"
            self._apply_filter()

    def action_toggle_wrap(self) -> None:
        """Soft-wrap long lines to the pane's width, or cut them again."""
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
        self._recount()
        self._status.refresh()

    def action_close_search(self) -> None:
        """Close the prompt; a search's highlight goes with it (the last match stays selected)."""
        self._search.remove_class("-open")
        if self._search.mode == "search" or self._needle:
            self._search.value = ""
            self._set_needle("")
        self._lines.focus()

    def action_next_match(self) -> None:
        """Select the next line that contains the search text."""
        self._step_match(forward=True)

    def action_previous_match(self) -> None:
        """Select the previous line that contains the search text."""
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
        except ValueError as exc:
            self._note = str(exc)
            self._status.refresh()
            return False
        self.filters = (*[r for r in self.filters if r.chip != rule.chip], rule)
        self._note = ""
        self._apply_filter()
        return True

    # ------------------------------------------------------------------ prompt
    @on(Input.Changed, "LogSearch")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._search.mode == "search":
            self._set_needle(event.value)

    @on(Input.Submitted, "LogSearch")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        mode, value = self._search.mode, event.value.strip()
        if mode == "search":
            self._set_needle(event.value)
            self._lines.focus()  # the pane takes the keys from here: n / N walk the matches
            self._step_match(forward=True)
            return
        self._search.remove_class("-open")
        self._lines.focus()
        if mode == "command":
            mode, _, value = value.partition(" ")
            mode = {"filter-in": "filter-in", "filter-out": "filter-out", "goto": "goto", "go": "goto"}.get(
                mode.lower(), mode.lower())
            if mode in ("clear-filters", "unfilter", "clear"):
                self.action_clear_filters()
                return
            if mode in ("wrap", "fold", "errors"):
                {"wrap": self.action_toggle_wrap, "fold": self.action_toggle_fold,
                 "errors": self.action_toggle_errors}[mode]()
                return
            if mode not in ("filter-in", "filter-out", "goto"):
                mode, value = "goto", event.value.strip()
        if mode in ("filter-in", "filter-out"):
            self.add_filter(mode == "filter-in", value.strip())
        else:
            self.go_to(value)

    def _set_needle(self, needle: str) -> None:
        if needle != self._needle:
            self._search_run += 1
            self._needle = needle
            self._note = ""
            self._lines.clear_cache()
            self._lines.refresh()
            self._recount()
            self._status.refresh()

    def _recount(self) -> None:
        """Count the search's matches again (in slices); the status line says "counting…" meanwhile."""
        self._matches = None
        if not self._needle:
            return
        self._count(self._search_run, count_matches(self.index, self._needle))

    @work(group="log-count", exclusive=True)
    async def _count(self, run: int, steps: Iterator[array[int] | None]) -> None:
        """Count in slices, one per turn of the event loop (a worker: the coroutine is made when it starts)."""
        for found in steps:
            if run != self._search_run:
                return
            if found is not None:
                self._matches = found
                self._status.refresh()
                return
            await asyncio.sleep(0)

    def _step_match(self, forward: bool) -> None:
        needle = self._needle
        if not needle:
            return
        index = self.index
        if self._cursor is not None and index.base <= self._cursor < index.end:
            start = self._cursor + (1 if forward else -1)
        else:
            start = self._edge_row(top=forward)
        if start >= index.end:
            start = index.base
        elif start < index.base:
            start = index.end - 1
        self._search_run += 1
        run = self._search_run
        if self._matches is None:
            self._recount()  # the count superseded by this step: start it again under the new run
        steps = index.find_steps(needle, start, forward=forward)
        if not self._search_slice(run, needle, steps):
            self._search_rest(run, needle, steps)

    @work(group="log-search", exclusive=True)
    async def _search_rest(self, run: int, needle: str, steps: Iterator[int | None]) -> None:
        """A search that needs the file: one slice per turn of the event loop, so keys stay responsive."""
        while run == self._search_run:
            await asyncio.sleep(0)
            if self._search_slice(run, needle, steps):
                return

    def _search_slice(self, run: int, needle: str, steps: Iterator[int | None]) -> bool:
        """Advance a search for at most ~10 ms; True when it is over (found, no match, or superseded)."""
        if run != self._search_run:
            return True  # superseded by a newer search, a reset or Escape
        deadline = time.monotonic() + _SEARCH_SLICE
        for row in steps:
            if row is not None:
                self._note = f"match at line {self.index.no_for_row(row):,}"
                self._select(row, summary=False)
                return True
            if time.monotonic() > deadline:
                self._note = f"searching for {needle!r}…"
                self._status.refresh()
                return False
        self._note = f"no match for {needle!r}"
        self._status.refresh()
        return True

    # ------------------------------------------------------------------ export
    def export(self, path: Path) -> None:
        """Write the lines the pane shows (its filters and folds applied, summary rows as ``▶ ...``) to ``path``:
        gathered in slices on the loop, written (atomically, 0600) on a thread; a toast says where, or why not."""
        self._export(path)

    @work(group="log-export", exclusive=True)
    async def _export(self, path: Path) -> None:
        index = self.index
        out: list[str] = []
        deadline = time.monotonic() + _SEARCH_SLICE
        for y in range(min(index.view_len(), MAX_EXPORT)):
            if y >= index.view_len():
                break
            is_summary, value = index.view_entry(y)
            out.append(f"▶ {index.block_summary(index.blocks[value])}" if is_summary else index.text(value))
            if time.monotonic() > deadline:
                await asyncio.sleep(0)
                deadline = time.monotonic() + _SEARCH_SLICE
        from symmtui.fsatomic import write_atomic

        data = ("\n".join(visible(line) for line in out) + "\n").encode()
        try:
            await asyncio.to_thread(write_atomic, path, data)
        except OSError as exc:
            self.notify(f"export failed: {path}: {exc.strerror or exc}", severity="error", timeout=8)
            return
        cut = f" (the first {MAX_EXPORT:,})" if index.view_len() > MAX_EXPORT else ""
        self.notify(f"{len(out):,} lines{cut} written to {path}", timeout=8)

    # ------------------------------------------------------------------ filters
    def _apply_filter(self) -> None:
        """Show what errors-only and the regex filters keep; regexes are judged in slices (a worker)."""
        self._filter_run += 1
        keep = ViewFilter(self.index, self._errors_only, self.filters)
        if not self.filters:
            self.filtering = ""
            self._show_filtered(errors_filter() if self._errors_only else None, None)
            return
        self.filtering = "filtering…"
        self._status.refresh()
        self._build(self._filter_run, keep)

    @work(group="log-filter", exclusive=True)
    async def _build(self, run: int, keep: ViewFilter) -> None:
        """Judge the filter's rows in slices; the view changes once they are all judged."""
        for rows in build(keep):
            if run != self._filter_run:
                return
            if rows is not None:
                self.filtering = ""
                self._show_filtered(keep, rows)
                return
            await asyncio.sleep(0)

    def _show_filtered(self, keep: Keep | None, rows: array[int] | None) -> None:
        anchor = self._top_row()
        self.index.set_filter(keep, rows)
        self._lines.clear_cache()
        self._keep_place(anchor)
        self._recount()
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
    def _step_error(self, forward: bool) -> None:
        index = self.index
        targets = [t for t in index.targets if index.is_shown(t)] if index.filtered else index.targets
        if not targets:
            self._note = "no errors"
            self._status.refresh()
            return
        if self._cursor is not None and index.base <= self._cursor < index.end:
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
        """The row at the top (or bottom) of the screen; base/end-1 when empty."""
        lines = self._lines
        y = int(lines.scroll_y) if top else int(lines.scroll_y) + max(lines.size.height - 1, 0)
        row = self.index.nearest_row(y)
        if row is None:
            return self.index.base if top else self.index.end - 1
        return row

    def _select(self, row: int, *, summary: bool) -> None:
        self._cursor = row
        if self.following:
            self._set_following(False)
        self._programmatic = True
        try:
            self._scroll_near(row, top=False, summary=summary)
        finally:
            self._programmatic = False
        self._lines.refresh()
        self._status.refresh()

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
        width = 1 if self.wrap else self.index.width + _GUTTER + 1
        self._lines.set_virtual_size(Size(width, self.index.view_len()))

    def _scroll_end(self) -> None:
        if not self._lines.is_mounted:
            return  # lines given before the pane is on screen: on_resize scrolls once it has a size
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
                # already at the end; scrolling again here would stop the animation driving this call
                self._set_following(True, scroll=False)
        elif new < old and self.following:
            self._set_following(False)
