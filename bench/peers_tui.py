"""The dashboard against toolong and lnav, each in its own tmux pane (120x40), the same run: `bench.peers` rows.

Every program runs as a user starts it, in a real terminal (tmux), on the same files: idle CPU on a
quiet log, first paint and peak RSS on a 1M-line (~129 MB) log, a key's effect on screen during a
50k lines/s flood, the demo idle after READY (8 simulated GPUs), and the dashboard's RSS during a
1M-line flood with a search typed. A key is timed from `tmux send-keys` until `capture-pane` shows
its effect, captured once after each burst of the pane's output (`Pane.watch`: tmux's pipe-pane into a
FIFO; a capture costs ~3 ms of CPU, so polling it in a loop took most of a core from the programs it
measured on this 2-core VM). CPU and memory are the whole process tree's (psutil;
peak RSS is the sum of each process's VmHWM). A missing peer is a line saying so.
"""

from __future__ import annotations

import atexit
import os
import select
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.peerkit import Table, Tree

SOCKET = f"bench-peers-{os.getpid()}"
SIZE = (120, 40)
IDLE_SECONDS = 10.0
FLOOD_RATE = 50_000
FLOOD_SECONDS = 8.0
BIG_LINES = 1_000_000

FLOOD_WRITER = r'''
import os, sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
total = int(rate * seconds)
chunk = max(1, rate // 100)
t0 = time.perf_counter()
n = 0
while n < total:
    body = "".join(f"[2026-11-29 10:{(n + i) // 60000 % 60:02d}:{(n + i) // 1000 % 60:02d} TP{(n + i) % 8}] Decode batch. "
                   f"#running-req: {(n + i) % 97}, #token: {n + i}, token usage: 0.42, gen throughput (token/s): "
                   f"1234.56, #queue-req: 0, seq={n + i:07d}\n" for i in range(min(chunk, total - n)))
    os.write(fd, body.encode())
    n += chunk
    delay = t0 + n / rate - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
os.close(fd)
'''

BARE_APP = (
    "from textual.app import App\nfrom textual.widgets import Static\n"
    "class Bare(App):\n    def compose(self):\n        yield Static('Decode batch. (a bare Textual app)')\n"
    "Bare().run()\n"
)


@dataclass
class Program:
    """A terminal program to start in a pane, and the keys that show and hide something: ``open_key`` (its effect:
    ``open_marker`` on screen) and ``close_key``, neither a lone Escape where the program has another (lnav's
    ``?``/``q``, symmtui's ``h``/``q``); ``escape``: the same for a box that Escape closes (see ``_keys_row``)."""

    name: str
    argv: Callable[[Path], list[str]]
    env: dict[str, str]
    open_key: str
    open_marker: str
    close_key: str
    cwd: Path | None = None
    escape: tuple[str, str, str] | None = None


@atexit.register
def _end_server() -> None:
    """The bench's tmux server goes with it, and its socket file too (tmux leaves the file behind)."""
    if shutil.which("tmux") is None:
        return
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True, check=False)
    (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / SOCKET).unlink(missing_ok=True)


def _tmux(*args: str) -> str:
    r = subprocess.run(["tmux", "-L", SOCKET, "-f", "/dev/null", *args], capture_output=True, text=True, check=False)
    return r.stdout


class Pane:
    """One program in a detached tmux session of ``size`` (SIZE)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path | None = None,
                 size: tuple[int, int] = SIZE) -> None:
        self.name = name
        cmd = "exec env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + shlex.join(argv)
        self.started = time.perf_counter()
        where = ["-c", str(cwd)] if cwd is not None else []
        _tmux("new-session", "-d", "-s", name, *where, "-x", str(size[0]), "-y", str(size[1]), cmd)
        pid = _tmux("display", "-p", "-t", name, "#{pane_pid}").strip()
        self.proc = psutil.Process(int(pid))

    def capture(self) -> str:
        return _tmux("capture-pane", "-p", "-t", self.name)

    def watch(self, fifo: Path) -> tuple[int, int]:
        """Copy what the program writes to its terminal into ``fifo`` (tmux pipe-pane); its read end, which
        ``wait_output`` blocks on, and a write end of our own that keeps it from reading as closed."""
        os.mkfifo(fifo)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        keep = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        _tmux("pipe-pane", "-O", "-t", self.name, f"exec cat > {shlex.quote(str(fifo))}")
        return rfd, keep

    def wait_output(self, rfd: int, cond: Callable[[str], bool], timeout: float) -> float | None:
        """As ``wait_for``, but the screen is captured only when the program has written since the last
        capture (all that is pending is read first), not in a loop."""
        t0 = time.perf_counter()
        while True:
            if cond(self.capture()):
                return time.perf_counter() - t0
            left = timeout - (time.perf_counter() - t0)
            if left <= 0 or not select.select([rfd], [], [], left)[0]:
                return None
            try:
                while os.read(rfd, 1 << 16):
                    pass
            except BlockingIOError:
                pass

    def keys(self, key: str) -> None:
        _tmux("send-keys", "-t", self.name, key)

    def wait_for(self, cond: Callable[[str], bool], timeout: float) -> float | None:
        """Seconds until ``cond(screen)`` holds (polled), None after ``timeout``."""
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout:
            if cond(self.capture()):
                return time.perf_counter() - t0
            time.sleep(0.001)
        return None

    def tree(self) -> list[psutil.Process]:
        try:
            return [self.proc, *self.proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def cpu(self) -> dict[int, float]:
        out = {}
        for p in self.tree():
            try:
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return out

    def hwm_mb(self) -> float:
        total = 0.0
        for p in self.tree():
            try:
                for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) / 1024
            except OSError:
                pass
        return total

    def rss_mb(self) -> float:
        total = 0.0
        for p in self.tree():
            try:
                total += p.memory_info().rss / 2**20
            except psutil.NoSuchProcess:
                pass
        return total

    def close(self) -> None:
        procs = self.tree()
        _tmux("kill-session", "-t", self.name)
        _, alive = psutil.wait_procs(procs, timeout=3)
        for p in alive:  # the programs we started, by their pid
            p.kill()


def cpu_percent(pane: Pane, seconds: float) -> float:
    c0, w0 = pane.cpu(), time.perf_counter()
    time.sleep(seconds)
    c1, w1 = pane.cpu(), time.perf_counter()
    used = sum(c1[p] - c0[p] for p in c1 if p in c0)
    return 100.0 * used / (w1 - w0)


def programs(trees: list[Tree], tmp: Path, toolong: str | None) -> tuple[list[Program], list[str]]:
    """The symmtui dashboards (one per tree), then the peers that are here; and a line per missing peer."""
    out: list[Program] = []
    missing: list[str] = []
    for tree in trees:
        env = {"PYTHONPATH": str(tree.path), "XDG_STATE_HOME": str(tmp / "state"),
               "XDG_CONFIG_HOME": str(tmp / "config"), "PYTHONDONTWRITEBYTECODE": "1"}
        out.append(Program(f"symmtui ({tree.label})", lambda log: [sys.executable, "-m", "symmtui", "--log", str(log)],
                           env, "h", "Keys (F1 or h)", "q", tree.path, ("/", "search the log (", "Escape")))
    tl_dir = toolong or _install_toolong(tmp)
    if tl_dir is not None:
        out.append(Program("toolong", lambda log: [sys.executable, "-m", "toolong", str(log)],
                           {"PYTHONPATH": tl_dir}, "C-f", "Case sensitive", "Escape", tmp))
    else:
        missing.append("toolong: not installed (pip install --target DIR toolong failed; pass --toolong DIR)")
    if shutil.which("lnav"):
        home = tmp / "lnav-home"
        home.mkdir(exist_ok=True)
        out.append(Program("lnav", lambda log: ["lnav", str(log)], {"HOME": str(home)}, "?",
                           "A fancy log file viewer", "q", tmp))
    else:
        missing.append("lnav: not installed (apt-get install lnav)")
    return out, missing


def _install_toolong(tmp: Path) -> str | None:
    """toolong from PyPI into a throwaway folder (its own Textual); None when that is not possible."""
    dest = tmp / "toolong"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target",
                        str(dest), "toolong"], capture_output=True, text=True, timeout=300, check=False)
    return str(dest) if r.returncode == 0 and (dest / "toolong").is_dir() else None


def _screen_has_log(screen: str) -> bool:
    return "Decode batch." in screen or "fired up and ready" in screen or "server_args=ServerArgs(" in screen


REAL_LOG = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sglang-tp8-ready.log"
"""A real SGLang bring-up (TP8, to READY), repeated to BIG_LINES lines for the big-file rows."""
BIG_SIZE = (200, 50)


def real_big_log(path: Path) -> tuple[Path, int, int, int]:
    """REAL_LOG repeated to at least BIG_LINES lines; (path, lines, lines holding "shards" in any case,
    lines holding "TP3"), counted here."""
    lines = REAL_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    repeats = -(-BIG_LINES // len(lines))
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(repeats):
            fh.writelines(lines)
    shards = sum(1 for ln in lines if "shards" in ln.lower()) * repeats
    tp3 = sum(1 for ln in lines if "TP3" in ln) * repeats
    return path, len(lines) * repeats, shards, tp3


def quiet_log(path: Path) -> Path:
    from bench.engine import READY, STARTUP

    path.write_text(STARTUP + READY + "".join(
        f"[2026-11-29 10:00:{i % 60:02d} TP0] Decode batch. #running-req: 1, seq={i:07d}\n" for i in range(200)))
    return path


def measure_paint(prog: Program, log: Path, runs: int,
                  size: tuple[int, int] = SIZE) -> tuple[list[float], list[float], list[float], list[float]]:
    """(first paint seconds, peak RSS MB after it settled, CPU % over 10 s once settled, CPU-seconds of the
    process tree until the paint: what the load does not stretch) per run."""
    paints, rss, idle, cpu = [], [], [], []
    for k in range(runs):
        pane = Pane(f"paint{k}", prog.argv(log), prog.env, prog.cwd, size)
        try:
            took = pane.wait_for(_screen_has_log, 60)
            if took is None:
                raise SystemExit(f"{prog.name}: no log line on screen in 60 s:\n{pane.capture()}")
            paints.append(time.perf_counter() - pane.started)
            cpu.append(sum(pane.cpu().values()))
            for _ in range(40):  # until it has settled (indexing done): 0.5 s under 5 % of a core
                if cpu_percent(pane, 0.5) < 5:
                    break
            rss.append(pane.hwm_mb())
            idle.append(cpu_percent(pane, IDLE_SECONDS) if k == 0 else float("nan"))
        finally:
            pane.close()
    return paints, rss, idle, cpu


@dataclass
class BigFile:
    """What the dashboard did on the big file: seconds for each check, and what it said."""

    indexed: float = float("nan")
    goto1: float = float("nan")
    search: float = float("nan")
    search_said: str = ""
    filt: float = float("nan")
    filter_said: str = ""
    idle: float = float("nan")
    rss: float = float("nan")


def measure_bigfile(prog: Program, log: Path, lines: int, shards: int, tp3: int) -> BigFile:
    """The dashboard on the finished big file at BIG_SIZE: indexed (the status line says no more
    "indexing"), CPU once indexed, ``:goto 1`` showing line 1, ``/shards`` counting every match in the file,
    ``:filter-in TP3`` applied to the whole file; peak RSS after all of it."""
    out = BigFile()
    first = REAL_LOG.read_text(encoding="utf-8").splitlines()[0][:60]
    pane = Pane("bigfile", prog.argv(log), prog.env, prog.cwd, BIG_SIZE)
    try:
        if pane.wait_for(_screen_has_log, 60) is None:
            raise SystemExit(f"{prog.name}: no log line on screen in 60 s:\n{pane.capture()}")
        done = pane.wait_for(lambda s: "indexing" not in s and f"{lines:,} lines" in s, 120)
        out.indexed = (time.perf_counter() - pane.started) if done is not None else float("nan")
        for _ in range(40):
            if cpu_percent(pane, 0.5) < 5:
                break
        out.idle = cpu_percent(pane, IDLE_SECONDS)
        t0 = time.perf_counter()
        pane.keys(":")
        pane.wait_for(lambda s: "goto WHERE" in s, 10)
        _tmux("send-keys", "-t", pane.name, "-l", "goto 1")
        pane.keys("Enter")
        if pane.wait_for(lambda s: f"▸ {first}" in s, 30) is not None:
            out.goto1 = time.perf_counter() - t0
        t0 = time.perf_counter()
        pane.keys("/")
        pane.wait_for(lambda s: "search the log (" in s, 10)
        _tmux("send-keys", "-t", pane.name, "-l", "shards")
        pane.keys("Enter")
        want = f"of {shards:,} "
        if pane.wait_for(lambda s: want in s, 120) is not None:
            out.search = time.perf_counter() - t0
        out.search_said = next((ln.strip("│ ") for ln in pane.capture().splitlines() if "/shards/" in ln), "")
        pane.keys("Escape")
        t0 = time.perf_counter()
        pane.keys(":")
        pane.wait_for(lambda s: "goto WHERE" in s, 10)
        _tmux("send-keys", "-t", pane.name, "-l", "filter-in TP3")
        pane.keys("Enter")
        hidden = f"{lines - tp3:,} hidden"
        if pane.wait_for(lambda s: hidden in s, 120) is not None:
            out.filt = time.perf_counter() - t0
        out.filter_said = next((ln.strip("│ ") for ln in pane.capture().splitlines() if " in /TP3/" in ln), "")
        out.rss = pane.hwm_mb()
    finally:
        pane.close()
    return out


def measure_idle(prog: Program, log: Path, seconds: float = IDLE_SECONDS) -> float:
    pane = Pane("idle", prog.argv(log), prog.env, prog.cwd)
    try:
        if pane.wait_for(_screen_has_log, 30) is None:
            raise SystemExit(f"{prog.name}: no log line on screen in 30 s:\n{pane.capture()}")
        time.sleep(3.0)  # start-up is not idle
        return cpu_percent(pane, seconds)
    finally:
        pane.close()


def measure_keys(prog: Program, log: Path, writer: Path, pair: tuple[str, str, str] | None = None) -> list[float]:
    """Seconds from a key sent to its effect on screen (open and close), during a 50k lines/s flood: the
    program's ``open_key``/``close_key``, or ``pair`` (open key, its marker, close key)."""
    open_key, open_marker, close_key = pair or (prog.open_key, prog.open_marker, prog.close_key)
    pane = Pane("keys", prog.argv(log), prog.env, prog.cwd)
    out: list[float] = []
    fifo = log.with_suffix(".out")
    rfd, keep = pane.watch(fifo)
    try:
        if pane.wait_for(_screen_has_log, 30) is None:
            raise SystemExit(f"{prog.name}: no log line on screen in 30 s:\n{pane.capture()}")
        time.sleep(1.0)
        flood = subprocess.Popen([sys.executable, str(writer), str(log), str(FLOOD_RATE), str(FLOOD_SECONDS)])
        time.sleep(0.5)
        try:
            while flood.poll() is None:
                for key, want in ((open_key, True), (close_key, False)):
                    t0 = time.perf_counter()
                    pane.keys(key)
                    took = pane.wait_output(rfd, lambda s, w=want: (open_marker in s) == w, 10)  # type: ignore[misc]
                    out.append(time.perf_counter() - t0 if took is not None else 10.0)
                    time.sleep(0.2)
        finally:
            flood.wait()
    finally:
        pane.close()
        os.close(rfd)
        os.close(keep)
        fifo.unlink()
    return out


def measure_demo_idle(tree: Tree, tmp: Path) -> float | None:
    """The demo after READY (crash, p y, r y): CPU of the dashboard process alone (not its simulated server)."""
    env = {"PYTHONPATH": str(tree.path), "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config")}
    pane = Pane("demo", [sys.executable, "-m", "symmtui", "demo", "--speed", "10", "--no-record"], env, tree.path)
    try:
        steps = (("CRASHED", None), ("Apply (y)", "p"), ("[patched]", "y"), ("Relaunch (y)", "r"), ("READY", "y"))
        for marker, key in steps:
            if key is not None:
                time.sleep(0.8)  # a confirmation ignores keys that come within a few hundred ms of it opening
                pane.keys(key)
            if pane.wait_for(lambda s, m=marker: m in (s.splitlines() or [""])[0] if m == "READY" else m in s,  # type: ignore[misc]
                             60) is None:
                return None
        time.sleep(3.0)
        c0, w0 = pane.proc.cpu_times(), time.perf_counter()
        time.sleep(IDLE_SECONDS)
        c1, w1 = pane.proc.cpu_times(), time.perf_counter()
        return 100.0 * ((c1.user + c1.system) - (c0.user + c0.system)) / (w1 - w0)
    finally:
        pane.close()


def measure_flood_search_rss(tree: Tree, tmp: Path, writer: Path) -> float:
    """Peak RSS (MB) of the dashboard while 1M lines are appended (100k lines/s) with a search typed."""
    env = {"PYTHONPATH": str(tree.path), "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config")}
    log = quiet_log(tmp / f"flood-search-{os.getpid()}.log")
    pane = Pane("fsearch", [sys.executable, "-m", "symmtui", "--log", str(log)], env, tree.path)
    try:
        if pane.wait_for(_screen_has_log, 30) is None:
            raise SystemExit(f"symmtui: no log line on screen in 30 s:\n{pane.capture()}")
        pane.keys("/")
        pane.wait_for(lambda s: "search the log (Enter" in s, 10)
        _tmux("send-keys", "-t", pane.name, "-l", "Traceback")
        flood = subprocess.Popen([sys.executable, str(writer), str(log), "100000", str(BIG_LINES / 100_000)])
        peak = 0.0
        while flood.poll() is None:
            peak = max(peak, pane.rss_mb())
            time.sleep(0.25)
        time.sleep(3.0)
        return max(peak, pane.hwm_mb())
    finally:
        pane.close()
        log.unlink(missing_ok=True)


PARTS = ("idle", "demo", "keys", "paint", "firstpaint", "bigfile", "fsearch")


def rows(table: Table, tmp: Path, *, quick: bool, toolong: str | None, parts: set[str] | None = None,
         rounds: int = 10) -> None:
    """Add the terminal rows to ``table`` (symmtui's trees first, then the peers here); ``parts``: some of PARTS;
    ``rounds``: of the interleaved first paints (``--runs``)."""
    want = set(PARTS) if parts is None else parts
    if shutil.which("tmux") is None:
        print("tui: tmux is not installed: the terminal rows are skipped")
        return
    progs, missing = programs(table.trees, tmp, toolong)
    for line in missing:
        print(f"tui: {line}")
    mine = progs[: len(table.trees)]
    peers = progs[len(table.trees):]
    writer = tmp / "tui_flood_writer.py"
    writer.write_text(FLOOD_WRITER)
    runs = 1 if quick else 3

    def peer_text(fmt: Callable[[Program], str]) -> str:
        return "; ".join([f"{p.name} {fmt(p)}" for p in peers] + [m.split(":")[0] + " missing" for m in missing])

    if "idle" in want:
        _idle_row(table, tmp, progs, mine, peer_text)
    if "demo" in want:
        _demo_row(table, tmp)
    if "keys" in want:
        _keys_row(table, tmp, progs, mine, peer_text, writer)
    if "paint" in want:
        _paint_row(table, tmp, progs, mine, peer_text, runs)
    if "firstpaint" in want:
        _first_paint_row(table, tmp, progs, mine, peer_text, 1 if quick else rounds)
    if "bigfile" in want:
        _bigfile_row(table, tmp, mine)
    if "fsearch" in want:
        print("tui: RSS during a 1M-line flood with a search typed", flush=True)
        rss = [measure_flood_search_rss(t, tmp, writer) for t in table.trees]
        table.add("dashboard peak RSS during a 1M-line flood (100k lines/s) with a search typed",
                  [f"{r:.0f} MB" for r in rss], "-", "< 250 MB", rss[0] < 250)


PeerText = Callable[[Callable[[Program], str]], str]


def _idle_row(table: Table, tmp: Path, progs: list[Program], mine: list[Program], peer_text: PeerText) -> None:
    print("tui: idle CPU on a quiet log", flush=True)
    quiet = quiet_log(tmp / "quiet.log")
    idle = {p.name: measure_idle(p, quiet) for p in progs}
    table.add(f"dashboard idle CPU (quiet log, no GPU on this host), {IDLE_SECONDS:.0f} s",
              [f"{idle[p.name]:.2f} % of a core" for p in mine], peer_text(lambda p: f"{idle[p.name]:.2f} %"),
              "<= 0.5 %", idle[mine[0].name] <= 0.5)


def _demo_row(table: Table, tmp: Path) -> None:
    print("tui: demo idle after READY", flush=True)
    demo = [measure_demo_idle(t, tmp) for t in table.trees]
    table.add(f"demo dashboard idle after READY (8 simulated GPUs), {IDLE_SECONDS:.0f} s",
              ["not READY in 60 s" if d is None else f"{d:.2f} % of a core" for d in demo], "-", "<= 1 %",
              demo[0] is not None and demo[0] <= 1.0)


def _keys_row(table: Table, tmp: Path, progs: list[Program], mine: list[Program], peer_text: PeerText,
              writer: Path) -> None:
    """Two rows: keys that are not a lone Escape (symmtui's help ``h``/``q``, lnav's ``?``/``q``: the target), and
    a box that Escape closes (symmtui's search, toolong's find). A Textual app hears a lone ESC only when its
    input thread wakes after ``ESCDELAY`` (100 ms: it may start an escape sequence), and that thread wakes
    every 0.1 s, so Escape takes 100-200 ms in any Textual app, flood or not; the bare row shows that floor."""
    print("tui: a key shown during a 50k lines/s flood", flush=True)
    plain: dict[str, list[float]] = {}
    esc: dict[str, tuple[str, list[float]]] = {}
    for p in progs:
        if p.close_key != "Escape":
            plain[p.name] = measure_keys(p, quiet_log(tmp / "keys.log"), writer)
        pair = p.escape or ((p.open_key, p.open_marker, p.close_key) if p.close_key == "Escape" else None)
        if pair is not None:
            esc[p.name] = (pair[0], measure_keys(p, quiet_log(tmp / "keys.log"), writer, pair))

    def figures(got: list[float]) -> str:
        return f"median {statistics.median(got) * 1000:.0f} ms, max {max(got) * 1000:.0f} ms ({len(got)} keys)"

    peers = progs[len(mine):]
    table.add(f"typed key shown during a {FLOOD_RATE // 1000}k lines/s flood ({FLOOD_SECONDS:.0f} s): a panel opened "
              "and closed by keys that are not a lone Escape",
              [f"`{p.open_key}`/`{p.close_key}` {figures(plain[p.name])}" for p in mine],
              "; ".join(f"{p.name} `{p.open_key}`/`{p.close_key}` {figures(plain[p.name])}" for p in peers
                        if p.name in plain) or "-", "max <= 100 ms", max(plain[mine[0].name]) <= 0.100)
    table.add("the same, a box that Escape closes (a Textual app hears a lone ESC after ESCDELAY, 100 ms, at its "
              "input thread's next 0.1 s wake-up)",
              [f"`{esc[p.name][0]}`/`Escape` {figures(esc[p.name][1])}" for p in mine if p.name in esc],
              "; ".join(f"{p.name} `{esc[p.name][0]}`/`Escape` {figures(esc[p.name][1])}" for p in peers
                        if p.name in esc) or "-", "- (Textual's floor, 100-200 ms)", None)


def _paint_row(table: Table, tmp: Path, progs: list[Program], mine: list[Program], peer_text: PeerText,
               runs: int) -> None:
    big, lines, _shards, _tp3 = real_big_log(tmp / "big.log")
    mb = big.stat().st_size / 1e6
    print(f"tui: first paint, peak RSS and CPU once settled on a {lines:,}-line log (a real one repeated), "
          f"{BIG_SIZE[0]}x{BIG_SIZE[1]}", flush=True)
    paint = {p.name: measure_paint(p, big, runs, BIG_SIZE) for p in progs}
    bare = Program("bare Textual app", lambda _log: [sys.executable, "-c", BARE_APP], {}, "", "", "", tmp)
    bare_run = measure_paint(bare, big, runs, BIG_SIZE)
    bare_paint, bare_cpu = statistics.median(bare_run[0]), statistics.median(bare_run[3])

    def painted(p: Program) -> str:
        return f"{statistics.median(paint[p.name][0]):.2f} s ({statistics.median(paint[p.name][3]):.2f} CPU-s)"

    table.add(f"first paint on a {lines // 1000}k-line ({mb:.0f} MB) log, {BIG_SIZE[0]}x{BIG_SIZE[1]}, median of "
              f"{runs} (the CPU-seconds spent until then)", [painted(p) for p in mine],
              peer_text(painted) + f"; a bare Textual app {bare_paint:.2f} s ({bare_cpu:.2f} CPU-s)",
              "<= 0.8 s", statistics.median(paint[mine[0].name][0]) <= 0.8)
    table.add(f"peak RSS, {lines // 1000}k-line log (settled), median of {runs}",
              [f"{statistics.median(paint[p.name][1]):.0f} MB" for p in mine],
              peer_text(lambda p: f"{statistics.median(paint[p.name][1]):.0f} MB"),
              "<= 150 MB", statistics.median(paint[mine[0].name][1]) <= 150)
    table.add(f"CPU once settled on that log (indexing done), {IDLE_SECONDS:.0f} s",
              [f"{paint[p.name][2][0]:.1f} % of a core" for p in mine],
              peer_text(lambda p: f"{paint[p.name][2][0]:.1f} %"), "< 10 %", paint[mine[0].name][2][0] < 10)
    big.unlink()


def measure_first_paints(progs: list[Program], log: Path, rounds: int,
                         size: tuple[int, int] = BIG_SIZE) -> dict[str, tuple[list[float], list[float]]]:
    """(first paint seconds, CPU-seconds until then) of each program over ``rounds`` rounds, every program in turn
    in each: a VM whose speed moves within minutes moves every program's figures alike."""
    out: dict[str, tuple[list[float], list[float]]] = {p.name: ([], []) for p in progs}
    for k in range(rounds):
        for p in progs:
            pane = Pane(f"first{k}", p.argv(log), p.env, p.cwd, size)
            try:
                if pane.wait_for(_screen_has_log, 60) is None:
                    raise SystemExit(f"{p.name}: no log line on screen in 60 s:\n{pane.capture()}")
                out[p.name][0].append(time.perf_counter() - pane.started)
                out[p.name][1].append(sum(pane.cpu().values()))
            finally:
                pane.close()
    return out


def _first_paint_row(table: Table, tmp: Path, progs: list[Program], mine: list[Program], peer_text: PeerText,
                     rounds: int) -> None:
    big, lines, _shards, _tp3 = real_big_log(tmp / "big.log")
    print(f"tui: first paint on a {lines:,}-line log, {rounds} rounds, every program in turn", flush=True)
    bare = Program("a bare Textual app", lambda _log: [sys.executable, "-c", BARE_APP], {}, "", "", "", tmp)
    got = measure_first_paints([*progs, bare], big, rounds)

    def fmt(p: Program) -> str:
        paints, cpu = got[p.name]
        return (f"{statistics.median(paints):.2f} s ({min(paints):.2f}-{max(paints):.2f}; "
                f"{statistics.median(cpu):.2f} CPU-s)")

    table.add(f"first paint on a {lines // 1000}k-line log, {BIG_SIZE[0]}x{BIG_SIZE[1]}, median of {rounds} rounds "
              "with every program in turn (range; CPU-seconds until then)", [fmt(p) for p in mine],
              peer_text(fmt) + f"; {bare.name} {fmt(bare)}", "<= 0.8 s",
              statistics.median(got[mine[0].name][0]) <= 0.8)
    big.unlink()


def _bigfile_row(table: Table, tmp: Path, mine: list[Program]) -> None:
    big, lines, shards, tp3 = real_big_log(tmp / "bigfile.log")
    print(f"tui: the whole {lines:,}-line log: :goto 1, a search counted, a filter", flush=True)
    got = [measure_bigfile(p, big, lines, shards, tp3) for p in mine]

    def fmt(b: BigFile) -> str:
        return (f"indexed in {b.indexed:.1f} s; `:goto 1` line 1 in {b.goto1 * 1000:.0f} ms; `/shards` "
                f"{shards:,} of {shards:,} counted in {b.search:.1f} s; `:filter-in TP3` {lines - tp3:,} hidden in "
                f"{b.filt:.1f} s; RSS {b.rss:.0f} MB")
    ok = all(x == x for x in (got[0].goto1, got[0].search, got[0].filt)) and got[0].rss <= 150
    table.add(f"the whole {lines // 1000}k-line log in the pane ({BIG_SIZE[0]}x{BIG_SIZE[1]}): line 1, every "
              "match counted, a filter over every line", [fmt(b) for b in got],
              "lnav: line 1 one key away, every match (not timed)", "all three; RSS <= 150 MB", ok)
    big.unlink()
