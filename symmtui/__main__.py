"""Entry point for ``python -m symmtui``."""

from __future__ import annotations

import sys

from symmtui.cli import main

if __name__ == "__main__":
    sys.exit(main())
