"""The options of `symmtui gpus` (and `python -m symmtui.gpu`): argparse and the input checks, nothing heavy."""

from __future__ import annotations

import argparse

from symmtui import boundary

HELP = "show GPUs, the processes holding their memory and the topology matrix (NVML)"
EXIT_UNAVAILABLE = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `symmtui gpus`."""
    parser.add_argument("--json", action="store_true", help="print one JSON document (schema symmtui.gpus/1); with --watch one per sample (JSON Lines)")
    topo = parser.add_mutually_exclusive_group()
    topo.add_argument("--topo", action="store_true",
                      help="only the topology: matrix, legend, P2P matrices, NVLinks and facts")
    topo.add_argument("--no-topo", action="store_true", help="leave the topology out")
    parser.add_argument("--watch", action="store_true", help="refresh the table until Ctrl-C")
    parser.add_argument("--interval", type=boundary.seconds(minimum=0.05, maximum=3600.0, zero=None), default=1.0, metavar="S",
                        help="seconds between refreshes with --watch (default 1)")
    parser.add_argument("--debug", action="store_true", help="also show what one sample costs")
    parser.add_argument("--source", metavar="URL", action="append", default=None,
                        help="read the GPUs from an exporter instead of NVML (repeatable; rows grouped by host): "
                             "dcgm-exporter or nvitop-exporter /metrics, or a Prometheus server's /api/v1/query")
    parser.add_argument("--source-timeout", metavar="S", type=boundary.seconds(minimum=0.1, maximum=300.0, zero=None),
                        default=5.0, help="seconds one --source may take to answer (default 5)")
    parser.add_argument("--standin", metavar="SCENARIO", type=boundary.path,
                        help="use a simulated host instead of NVML (also $SYMMTUI_NVML_STANDIN); "
                             "scenarios: rtx-pro-6000-x8-pcie, h200-x2-nvswitch, or a recording .json")
