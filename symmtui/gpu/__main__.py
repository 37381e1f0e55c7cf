"""`python -m symmtui.gpu [gpus options]`: the gpus verb without the rest of the CLI (for bare GPU hosts)."""

from __future__ import annotations

import sys

from symmtui import boundary
from symmtui.gpu import options
from symmtui.gpu.cli import gpus_main


def main(argv: list[str] | None = None) -> int:
    """Parse the gpus verb's options and run it (same boundary and error lines as `symmtui gpus`)."""

    def body() -> int:
        parser = boundary.Parser(prog="python -m symmtui.gpu", description=options.HELP)
        options.add_arguments(parser)
        args = parser.parse_args(argv)
        boundary.check_values(args)

        return gpus_main(args)

    return boundary.run_checked(body)


if __name__ == "__main__":
    sys.exit(main())
