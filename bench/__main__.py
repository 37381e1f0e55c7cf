"""Run every benchmark: ``python -m bench`` (or ``python -m bench follow engine`` for some)."""

from __future__ import annotations

import subprocess
import sys
import time

ALL = ("follow", "engine", "longlog", "gpu", "launch", "logview", "ui", "dashboard", "corpus", "flood", "stacks", "exporters", "bundle", "changes", "startup")  # records needs --against: run it alone


def main(argv: list[str]) -> int:
    names = argv or list(ALL)
    unknown = [n for n in names if n not in ALL]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(ALL)}", file=sys.stderr)
        return 2
    failed: list[str] = []
    for name in names:
        print(f"\n=== bench.{name} ===", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", f"bench.{name}"])
        print(f"(bench.{name}: exit {rc}, {time.perf_counter() - t0:.1f} s)", flush=True)
        if rc != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed or missed a target: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
