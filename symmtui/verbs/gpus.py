"""The `gpus` verb: GPUs, processes and the topology matrix from NVML, as a table or JSON."""

from __future__ import annotations

import argparse

from symmtui.gpu.options import EXIT_UNAVAILABLE, HELP, add_arguments

__all__ = ["EXIT_UNAVAILABLE", "HELP", "add_arguments", "run"]


def run(args: argparse.Namespace) -> int:
    """Print the GPUs; 3 when NVML is unavailable."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.gpu.cli import gpus_main

    return gpus_main(args)
