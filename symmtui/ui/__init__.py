"""The dashboard (Textual): the app, its widgets and screens.

A lone Escape is told from the start of a key sequence by waiting: Textual waits 100 ms (``ESCDELAY``), so
every Escape (closing the search, a dialog) showed 100 ms late. The dashboard waits 50 ms, as neovim does
(its ``ttimeoutlen``); ``ESCDELAY=100`` (milliseconds) restores Textual's wait on a link that splits sequences.
"""

from __future__ import annotations

import os

os.environ.setdefault("ESCDELAY", "50")  # read once, when Textual is first imported (symmtui.ui.app)
