"""Command line: one thin verb module per sub-command, all over the same engine."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from symmtui import __version__
from symmtui.errors import UserError

# verb name -> module under symmtui.verbs. Each module defines
#   HELP: str                                   one line for --help
#   add_arguments(parser: argparse.ArgumentParser) -> None
#   run(args: argparse.Namespace) -> int         the exit code
VERBS: dict[str, str] = {
    "wait": "symmtui.verbs.wait",
    "scan": "symmtui.verbs.scan",
    "gpus": "symmtui.verbs.gpus",
    "patch": "symmtui.verbs.patch",
    "launch": "symmtui.verbs.launch",
    "stop": "symmtui.verbs.stop",
    "demo": "symmtui.verbs.demo",
}
DASHBOARD = "symmtui.verbs.dashboard"

def _load(name: str) -> ModuleType:
    return importlib.import_module(name)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; verbs are imported here (they import no heavy modules at top level)."""
    parser = argparse.ArgumentParser(
        prog="symmtui",
        description="Dashboard and headless verbs for bringing up SGLang / vLLM servers.",
    )
    parser.add_argument("--version", action="version", version=f"symmtui {__version__}")
    _load(DASHBOARD).add_arguments(parser)
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, modname in VERBS.items():
        mod = _load(modname)
        p = sub.add_parser(verb, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    modname = VERBS[args.verb] if args.verb else DASHBOARD
    try:
        code: int = _load(modname).run(args)
    except UserError as exc:
        print(f"symmtui: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
