"""Command line: one thin verb module per sub-command, all over the same engine."""

from __future__ import annotations

import argparse
import errno
import gc
import os
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, cast

from symmtui import __version__, boundary, clitext
from symmtui.verbs import (
    dashboard,
    demo,
    gpus,
    history,
    launch,
    patch,
    replay,
    report,
    scan,
    serve,
    stacks,
    stop,
    wait,
)

# verb name -> its module under symmtui.verbs. Each module defines
#   HELP: str                                   one line for --help
#   add_arguments(parser: argparse.ArgumentParser) -> None
#   run(args: argparse.Namespace) -> int         the exit code
# Every start imports every verb module (their HELP lines, the named verb's options), so a verb module
# imports only light modules at its top: what its run() needs is imported there, when that verb runs
# (the start-up design: `python -m bench.startup` times it).
VERBS: dict[str, ModuleType] = {
    "wait": wait,
    "scan": scan,
    "gpus": gpus,
    "patch": patch,
    "launch": launch,
    "stop": stop,
    "demo": demo,
    "stacks": stacks,
    "report": report,
    "replay": replay,
    "history": history,
    "serve": serve,
}
DASHBOARD = dashboard  # no verb: the dashboard (its options are the top-level ones)
EXAMPLES = """\
each verb's options: symmtui VERB --help; every verb: docs/verbs.md; the dashboard: docs/dashboard.md

examples:
  symmtui demo                        the dashboard on a simulated 8-GPU server (no GPU, no SGLang)
  symmtui wait --log server.log --url http://127.0.0.1:30000/health
                                      block until the server is ready: exit 0 ready, 1 crashed, 124 timed out
  symmtui scan server.log             a finished log's phases, errors, diagnosis and verdict"""

class _VerbParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Sub-commands whose options are added when their verb is the one given: a start builds one
    verb's options, not every verb's (``--help`` lists the verbs from their HELP lines alone)."""

    pending: dict[str, Callable[[argparse.ArgumentParser], None]]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        if values and not isinstance(values, str):
            add = self.pending.pop(values[0], None)
            if add is not None:
                add(self._name_parser_map[values[0]])
        super().__call__(parser, namespace, values, option_string)


def build_parser(*, every_verb: bool = False) -> argparse.ArgumentParser:
    """The whole command line (the verb modules import no heavy modules at top level).

    A verb's options are added when the command line names that verb (``every_verb``: all of them
    now, for code that reads the parser's options rather than parsing with it)."""
    parser = boundary.Parser(
        prog="symmtui",
        description="Dashboard and headless verbs for bringing up SGLang / vLLM servers.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"symmtui {__version__}")
    DASHBOARD.add_arguments(parser)
    sub = cast(_VerbParsers, parser.add_subparsers(dest="verb", metavar="VERB", action=_VerbParsers))
    sub.pending = {}
    for verb, mod in VERBS.items():
        p = sub.add_parser(verb, help=mod.HELP, description=mod.HELP)
        if every_verb:
            mod.add_arguments(p)
        else:
            sub.pending[verb] = mod.add_arguments
    return parser


# A verb whose server handles SIGTERM / SIGHUP itself (aiohttp's loop: every tab's dashboard told to go).
OWN_SIGNALS = frozenset({"serve"})


def main(argv: Sequence[str] | None = None, *, signals: bool = False) -> int:
    """Parse, check every value at the boundary, run the verb; every failure is one line and an exit code.
    ``signals``: SIGTERM and SIGHUP end a verb as Ctrl-C does (the `symmtui` command's process)."""
    saved = clitext.guard_streams()
    hook = threading.excepthook
    threading.excepthook = _thread_error
    try:
        return boundary.run_checked(lambda: _dispatch(argv, signals))
    finally:
        threading.excepthook = hook
        clitext.restore_streams(saved)


def console() -> int:
    """The `symmtui` command and `python -m symmtui`: :func:`main`, then the process ends.

    The interpreter's exit runs full garbage collections over every object the imports made (~10 ms
    of CPU, a tenth of a `wait`'s start); frozen, they are skipped. Nothing is lost: the verb has
    closed what it opened, atexit handlers still run and every object not in a cycle is still freed.
    A buffered file left open in a reference cycle would lose its unflushed bytes: every file a verb
    writes is closed before it returns (``with`` blocks, ``fsatomic``).
    (:func:`main` itself leaves the collector alone: tests call it in-process, many times.)

    The collector is off while the verb starts: the imports alone ran ~115 collections (~30 ms of a dashboard's
    start) and make no garbage cycles. A verb turns it on once its options are read; the Textual front ends
    (``FRAMED``) once their first frame is drawn (``boundary.started``)."""
    boundary.own_process()
    gc.disable()
    try:
        return main(signals=True)
    finally:  # also after --help or --version (argparse's SystemExit)
        gc.freeze()


FRAMED = frozenset({None, "demo", "replay"})
"""The verbs (None: the dashboard) that turn the collector back on at their app's first frame, not at their start."""


def _dispatch(argv: Sequence[str] | None, signals: bool = False) -> int:
    args = build_parser().parse_args(argv)
    boundary.check_values(args)
    if args.verb not in FRAMED:
        gc.enable()
    elif boundary.owns_process():
        boundary.hold_for_first_frame()
    if signals and args.verb not in OWN_SIGNALS:
        boundary.stop_on_signals()  # before anything starts: a log command, the demo's servers
    code: int = (VERBS[args.verb] if args.verb else DASHBOARD).run(args)
    return code


GONE_TERMINAL = frozenset({errno.EIO, errno.EPIPE, errno.ENXIO})


def _thread_error(info: threading.ExceptHookArgs) -> None:
    """A worker thread's unexpected exception (a bug): its traceback to a crash file, and the verb ends with one
    line saying where it went, exit 2 (``boundary.run_checked``); with $SYMMTUI_DEBUG, the traceback here."""
    if os.environ.get(boundary.DEBUG_ENV) or info.exc_type is SystemExit:
        threading.__excepthook__(info)
        return
    if isinstance(info.exc_value, OSError) and info.exc_value.errno in GONE_TERMINAL:
        return  # the terminal went away (a closed pane, a dropped ssh): the screen's writer has nothing to write to
    import traceback  # here: ~2 ms, paid by a crashing thread only, not by every start

    name = info.thread.name if info.thread is not None else "a worker"
    details = "".join(traceback.format_exception(info.exc_type, info.exc_value, info.exc_traceback))
    boundary.internal_error(f"in {name}: {info.exc_type.__name__}: {info.exc_value}", details)
    boundary.ended_by_internal_error()


if __name__ == "__main__":
    sys.exit(console())
