"""Entry point for ``python -m symmtui``."""

from __future__ import annotations

import sys

from symmtui.cli import console

if __name__ == "__main__":
    sys.exit(console())
