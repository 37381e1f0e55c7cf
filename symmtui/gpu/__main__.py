"""`python -m symmtui.gpu [gpus options]`: the gpus verb without the rest of the CLI (for bare GPU hosts)."""

from __future__ import annotations

import argparse
import sys

from symmtui.errors import UserError
from symmtui.verbs import gpus


def main(argv: list[str] | None = None) -> int:
    """Parse the gpus verb's options and run it."""
    parser = argparse.ArgumentParser(prog="python -m symmtui.gpu", description=gpus.HELP)
    gpus.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return gpus.run(args)
    except UserError as exc:
        print(f"symmtui: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
