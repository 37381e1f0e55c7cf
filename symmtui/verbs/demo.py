"""The `demo` verb: the whole bring-up story offline (crash, diagnosis, patch, relaunch, ready)."""

from __future__ import annotations

import argparse

from symmtui import boundary

HELP = "play the whole story offline: a simulated 8-GPU server crashes with KeyError: 12, patch, relaunch, ready"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--speed", type=boundary.number(0.01, 1000.0, "1 loads in about a minute"), default=1.0, metavar="X",
                        help="timeline factor: 1 loads in about a minute, 10 in about 6 s (default 1)")
    parser.add_argument("--theme", default=None, metavar="NAME",
                        help="colour theme: symmtui-dark (default), symmtui-light, symmtui-contrast")
    parser.add_argument("--no-record", action="store_true",
                        help="do not keep the demo's bundle (by default: $XDG_STATE_HOME/symmtui/bundles/"
                        "demo-STORY.symmtui-bundle.json.gz, for symmtui report / replay)")
    parser.add_argument("--story", choices=("crash", "hang", "fix"), default="crash",
                        help="crash (default): KeyError: 12, patch, relaunch, ready; hang: rank TP5 stops in NCCL "
                        "init, STALLED, the stacks panel names it, relaunch (r) recovers; fix: DeepGEMM's "
                        "KeyError: '120a', p shows the profile change (SGLANG_ENABLE_JIT_DEEPGEMM=0), y applies it "
                        "and relaunches, ready")
    parser.add_argument("--nodes", type=int, choices=(1, 2), default=1, metavar="N",
                        help="2: a 2-node TP16 server (two simulated nodes; --story does not apply): node1's TP13 "
                        "hangs in NCCL init, STALLED names node1 and its stacks, relaunch (r) comes up READY")


def run(args: argparse.Namespace) -> int:
    # Textual: the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.ui.entry import run_demo

    return run_demo(float(args.speed), args.theme, args.story, record=not args.no_record, nodes=args.nodes)
