"""The tree and the table bench.peers and bench.peers_tui share: which symmtui is timed, and the printed rows."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Tree:
    """A symmtui source tree to time: this one, or an exported revision."""

    label: str
    path: Path

    def env(self, tmp: Path) -> dict[str, str]:
        env = dict(os.environ, PYTHONPATH=str(self.path), XDG_STATE_HOME=str(tmp / "state"),
                   XDG_CONFIG_HOME=str(tmp / "config"))
        return env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "symmtui", *args]


@dataclass
class Table:
    """The printed rows: measure, one column per tree, the peers, the target and whether it was met."""

    trees: list[Tree]
    rows: list[tuple[str, list[str], str, str, bool | None]] = field(default_factory=list)

    def add(self, measure: str, values: list[str], peer: str, target: str, ok: bool | None) -> None:
        self.rows.append((measure, values, peer, target, ok))
        print(f"  -> {measure}: {' / '.join(values)} | {peer} | {target} | {self._ok(ok)}", flush=True)

    @staticmethod
    def _ok(ok: bool | None) -> str:
        return "-" if ok is None else "met" if ok else "NOT met"

    def print(self) -> None:
        cols = " | ".join(f"symmtui ({t.label})" for t in self.trees)
        print(f"\n| measure | {cols} | peer, same run | goal | met |")
        print("|---|" + "---|" * len(self.trees) + "---|---|---|")
        for measure, values, peer, target, ok in self.rows:
            print(f"| {measure} | {' | '.join(values)} | {peer} | {target} | {self._ok(ok)} |")
