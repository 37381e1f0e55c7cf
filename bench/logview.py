"""Log pane benchmark: the pane's file index, search count and filter over a big log, against `wc -l` and `grep -c`
on the same file in the same run.

`.venv/bin/python -m bench.logview [--quick] [--big-mb N]` writes a log of N MiB (1024; --quick 128) of
SGLang-shaped lines (a traceback every 25,000 lines), warms the page cache, then times, each best of 3:
indexing every line (``log_file.LogFile.index``, the pane's thread, from its end first) against one
`wc -l` pass; counting a search's matches over every line (``log_filters.count``) and a filter-in over
every line, records kept whole (``log_filters.keep``) against one `grep -c` pass of the same pattern; and the
search again over a copy whose every line starts with vLLM's coloured worker prefix (``CYAN``/``RESET`` around
``(VllmWorkerProcess pid=N)``, vllm/executor/multiproc_worker_utils.py: a log file of a TP run holds the escapes),
whose chunks are searched on the text the pane shows, escapes stripped.
Memory: the index's bytes a line, and the RSS the process gained. Exits 1 when a target is missed:
9 bytes a line at most (8 of offset, 1 flag byte the pane adds), RSS growth under 12 bytes a line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from symmtui.ui.widgets.log_file import LogFile
from symmtui.ui.widgets.log_filters import FilterRule, compile_search, count, keep

TRACEBACK = [
    "[2026-11-29 09:40:17 TP{r}] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2714, in run',
    "    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]",
    "KeyError: 12",
]


def write_log(path: Path, megabytes: int) -> int:
    """SGLang-shaped lines to ``megabytes`` MiB; the number of lines."""
    n = 0
    size = megabytes << 20
    with open(path, "w", encoding="utf-8") as fh:
        while fh.tell() < size:
            chunk = []
            for _ in range(10_000):
                n += 1
                if n % 25_000 == 0:
                    chunk += [t.format(r=n % 8) for t in TRACEBACK]
                    n += len(TRACEBACK) - 1
                    continue
                chunk.append(f"[2026-11-29 09:{n // 60000 % 60:02d}:{n // 1000 % 60:02d} TP{n % 8}] Decode batch. "
                             f"#running-req: {n % 97}, #token: {n * 7 % 100003}, retracted: {n % 3}, line {n}")
            fh.write("\n".join(chunk) + "\n")
    return n


VLLM_PREFIX = "\033[1;36m(VllmWorkerProcess pid={pid})\033[0;0m "
"""vLLM's worker-output prefix (vllm/executor/multiproc_worker_utils.py: ``f"{CYAN}({worker_name} pid={pid}){RESET} "``)."""


def coloured(src: Path, dst: Path) -> None:
    """``src`` with vLLM's coloured worker prefix before every line."""
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8") as fout:
        for n, line in enumerate(fin):
            fout.write(VLLM_PREFIX.format(pid=4100 + n % 8) + line)


def best(fn: Callable[[], object], runs: int = 3) -> float:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def indexed(path: Path) -> LogFile:
    file = LogFile(path)
    assert file.open(), file.error
    file.index(lambda: False, lambda: None)
    return file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.logview", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 128 MiB log")
    ap.add_argument("--big-mb", type=int, default=None, help="the log's size in MiB (default 1024)")
    args = ap.parse_args(argv)
    mb = args.big_mb or (128 if args.quick else 1024)
    tmp = Path(tempfile.mkdtemp(prefix="bench-logview-"))
    path = tmp / "big.log"
    try:
        lines = write_log(path, mb)
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # the page cache, warm
        print(f"bench.logview: a {mb} MiB log, {lines:,} lines, load average {os.getloadavg()[0]:.1f}")
        proc = psutil.Process()
        rss0 = proc.memory_info().rss
        file = indexed(path)
        grown = proc.memory_info().rss - rss0
        per_line = len(file.starts) * file.starts.itemsize / file.rows
        t_index = best(lambda: indexed(path).close())
        t_wc = best(lambda: subprocess.run(["wc", "-l", str(path)], capture_output=True, check=True))
        rx, _ = compile_search("retracted: 2")
        matched: list[int] = []
        t_count = best(lambda: matched.__setitem__(slice(None), [r for f in count(rx, file, lambda: False,
                                                                                  lambda: False) for r in f.rows]))
        t_grep = best(lambda: subprocess.run(["grep", "-c", "retracted: 2", str(path)], capture_output=True))
        rule = FilterRule.parse(True, "TP3")
        kept: list[int] = []
        t_keep = best(lambda: kept.__setitem__(slice(None), [r for f in keep([rule], file, [], lambda: False,
                                                                             lambda: False) for r in f.rows]))
        t_grep3 = best(lambda: subprocess.run(["grep", "-c", "TP3", str(path)], capture_output=True))
        file.close()
        coloured_path = tmp / "coloured.log"
        coloured(path, coloured_path)
        path.unlink()  # the disk holds two logs at most
        subprocess.run(["cat", str(coloured_path)], stdout=subprocess.DEVNULL, check=True)
        cfile = indexed(coloured_path)
        cmatched: list[int] = []
        t_ccount = best(lambda: cmatched.__setitem__(slice(None), [r for f in count(rx, cfile, lambda: False,
                                                                                    lambda: False) for r in f.rows]))
        t_cgrep = best(lambda: subprocess.run(["grep", "-c", "retracted: 2", str(coloured_path)], capture_output=True))
        cfile.close()
        rows = [
            ("index every line (the pane's thread)", f"{t_index:.2f} s, {lines / t_index / 1e6:.1f} M lines/s",
             f"`wc -l` {t_wc:.2f} s", "-"),
            ("index memory", f"{per_line:.0f} bytes a line (+1 flag byte in the pane); RSS +{grown / lines:.1f} "
             "bytes a line", "-", "<= 9; RSS < 12"),
            ("count a search over every line (`retracted: 2`)", f"{t_count:.2f} s, {len(matched):,} rows",
             f"`grep -c` {t_grep:.2f} s", "-"),
            ("filter-in over every line (`TP3`, records whole)", f"{t_keep:.2f} s, {len(kept):,} rows kept",
             f"`grep -c` {t_grep3:.2f} s", "-"),
            ("count that search over the log with vLLM's coloured worker prefixes", f"{t_ccount:.2f} s, "
             f"{len(cmatched):,} rows", f"`grep -c` {t_cgrep:.2f} s", "-"),
        ]
        print("\n| measure | the pane | baseline (same run) | target |\n|---|---|---|---|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        failed = per_line > 9 or grown / lines >= 12
        print("a target missed" if failed else "all targets met")
        return 1 if failed and not args.quick else 0
    finally:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    sys.exit(main())
