"""A simulated SGLang server: an SGLang-shaped log on a compressed timeline, and /health on loopback."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import faulthandler
import http.server
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from symmtui.demo.sandbox import sandbox_has_capability

_OUT_LOCK = threading.Lock()
_RANKS: list[int] = []  # the rank processes this server started (the hang story; some setsid'd)

DETAILS = """\
Run it as ``python -m symmtui.demo.server [options]`` with stdout redirected to a log file (the
launcher does that). It prints what a real ``sglang.launch_server --tp N`` prints, in the real
line shapes (``[2025-10-29 06:48:05 TP3] ...`` rank prefixes, tqdm progress for the checkpoint
shards and the CUDA-graph capture, uvicorn lines, "The server is fired up and ready to roll!"),
one flushed line at a time, ``--speed`` times faster than a real load of a large model
(about 8 minutes at speed 1).

HTTP (on ``--host``/``--port``, default 127.0.0.1:30000): the socket opens at the "Uvicorn
running" step (connection refused before, as in SGLang), ``--listen-early`` opens it at start;
``GET /health`` answers 503 until the server is ready, then 200. ``/get_model_info`` and
``/v1/models`` answer small JSON. Each request gets a uvicorn access line in the log.

Faults: ``--crash keyerror`` prints the 8-rank ``KeyError: 12`` traceback during distributed
init, then "Received sigquit from a child process..." and exits 1; so does ``--enable-torch-symm-mem``
(SGLang's flag: the simulated host is SM120 and its tables lack 12, as SGLang 0.5.3 to 0.5.13; with
``--sandbox`` its tables decide); ``--crash segfault`` dies by
SIGSEGV during weight loading with no traceback; ``--crash exit`` exits 3 at start with no
output; ``--sandbox DIR --capability 12`` crashes with the KeyError only if the sandbox's tables
lack the capability (``symmtui.demo.sandbox``); ``--ignore-sigterm`` ignores SIGTERM (so a
stop must escalate); ``--grandchildren N`` forks N workers that call setsid and outlive the
server (like SGLang's schedulers, sglang issue 23627); ``--hang-rank R`` runs one process per
rank (titled ``sglang::scheduler_TPn`` as SGLang's are, the even ones setsid'd) and rank R stops
inside NCCL init while the others wait for it at a barrier (``symmtui stacks`` shows it);
``--hang-once FILE`` hangs only the first time (the demo's hang story: a relaunch recovers);
``--deepgemm-sm120`` dies at the start of the CUDA-graph capture with DeepGEMM's ``KeyError: '120a'``
(the traceback tail quoted in sgl-project/sglang#7227) unless ``SGLANG_ENABLE_JIT_DEEPGEMM=0`` is in
its environment (the demo's fix story: the catalogue's env action, applied to the profile, fixes it).

Several nodes: ``--nnodes 2 --node-rank R`` prints only this node's ranks (TP8..TP15 for node 1 of
``--tp 16``), SGLang's "CustomAllreduce is disabled because this process group spans across nodes."
and the node fields of ``server_args``; only node 0 serves HTTP (a worker node goes quiet after its
CUDA graphs, as SGLang's does). ``--rendezvous``: every node waits in "Init torch distributed" until all
of them reached it (node 0 listens at ``--dist-init-addr``), so node 0 serves only after every node spoke.

``--delays FILE``: a JSON object read at start, e.g. ``{"weights": 90}``: seconds the log's clock
(the line timestamps, which phase durations are read from) jumps at the end of the step ``init``,
``weights``, ``kv``, ``graphs`` or ``http``, as if it had taken that much longer; nothing waits. A
missing file is no delay. Two launches of one command (one command hash) can so differ in one phase.
With ``--delays`` the log's clock stands still between those jumps (it starts at the wall time of the
start): the phase durations read from the log are exactly the delays, whatever the machine's load
(a real clock adds the time the sped-up steps took, rounded to whole seconds, to each phase).

``--status-file PATH``: after every step the server atomically rewrites PATH with one JSON
object ``{"pid", "state": "loading"|"ready"|"crashed", "phase", "progress": 0..1,
"memory_fraction": 0..1, "time"}``; ``memory_fraction`` is how full each GPU would be (the demo's
NVML stand-in fills its memory to follow it). ``--tty-progress`` writes tqdm updates with
carriage returns on one line, as tqdm does when its output is redirected to a file.
"""
"""What the options do, in more words (shown by --help)."""

SITE = "/opt/venv/lib/python3.12/site-packages/sglang/srt"

# Memory as a fraction of each GPU, after each step (from the shape of a real TP8 load).
_MEM_INIT = 0.005
_MEM_WEIGHTS = 0.56
_MEM_KV = 0.88
_MEM_GRAPHS = 0.90


class _Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.speed: float = max(1e-6, float(args.speed))
        self.tp: int = int(args.tp)
        self.nnodes: int = int(args.nnodes)
        self.node_rank: int = int(args.node_rank)
        per = self.tp // self.nnodes
        self.my_ranks = range(self.node_rank * per, (self.node_rank + 1) * per)
        """The ranks this node runs (all of them on one node; TP8-TP15 on node 1 of a TP16 pair)."""
        self.head = self.node_rank == 0
        self.ready = threading.Event()
        self.httpd: http.server.ThreadingHTTPServer | None = None
        self.t0 = time.monotonic()
        self.phase = "starting"
        self.progress = 0.0
        self.memory = 0.0
        self.state = "loading"
        self.delays = _delays(args.delays)
        self.clock_offset = 0.0  # seconds the log's timestamps run ahead (--delays)
        self.log_clock = _dt.datetime.now() if args.delays is not None else None  # --delays: stands still

    # -- output ----------------------------------------------------------------------------

    def out(self, text: str, end: str = "\n") -> None:
        with _OUT_LOCK:
            sys.stdout.write(text + end)
            sys.stdout.flush()

    def stamp(self, rank: int | None = None) -> str:
        base = self.log_clock if self.log_clock is not None else _dt.datetime.now()
        now = (base + _dt.timedelta(seconds=self.clock_offset)).strftime("%Y-%m-%d %H:%M:%S")
        return f"[{now} TP{rank}]" if rank is not None else f"[{now}]"

    def ranks(self, text: str) -> None:
        for r in self.my_ranks:
            self.out(f"{self.stamp(r)} {text}")

    def sleep(self, real_seconds: float) -> None:
        time.sleep(real_seconds / self.speed)

    def extra(self, step: str) -> None:
        """The ``--delays`` file's seconds for ``step``: the log's clock jumps ahead by that much."""
        self.clock_offset += self.delays.get(step, 0.0)

    def status(self, phase: str | None = None, progress: float | None = None, memory: float | None = None) -> None:
        if phase is not None:
            self.phase = phase
        if progress is not None:
            self.progress = progress
        if memory is not None:
            self.memory = memory
        path = self.args.status_file
        if not path:
            return
        data = {
            "pid": os.getpid(),
            "state": self.state,
            "phase": self.phase,
            "progress": round(self.progress, 4),
            "memory_fraction": round(self.memory, 4),
            "time": time.time(),
        }
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)

    def progress_line(self, text: str, last: bool) -> None:
        if self.args.tty_progress:
            self.out("\r" + text, end="\n" if last else "")
        else:
            self.out(text)

    # -- http ------------------------------------------------------------------------------

    def listen(self) -> None:
        if self.httpd is not None:
            return
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                path = self.path.split("?", 1)[0]
                if path == "/health":
                    code, body = (200, b"") if server.ready.is_set() else (503, b"")
                elif path in ("/get_model_info", "/v1/models") and server.ready.is_set():
                    info = {"model_path": "/models/GLM-5-NVFP4", "is_generation": True}
                    code, body = 200, json.dumps(info).encode()
                elif path in ("/get_model_info", "/v1/models"):
                    code, body = 503, b""
                else:
                    code, body = 404, b'{"detail":"Not Found"}'
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                host, port = self.client_address[:2]
                phrase = ""
                with contextlib.suppress(ValueError):
                    phrase = http.HTTPStatus(int(code)).phrase
                server.out(f'{server.stamp()} INFO:     {host}:{port} - "{self.requestline}" {code} {phrase}')

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = http.server.ThreadingHTTPServer((self.args.host, self.args.port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True).start()

    # -- the story -------------------------------------------------------------------------

    def run(self) -> int:
        a = self.args
        self.status("starting", 0.0, 0.0)
        if a.crash == "exit":
            return 3
        if a.listen_early:
            self.listen()
        self.out(
            f"{self.stamp()} server_args=ServerArgs(model_path='/models/GLM-5-NVFP4', "
            f"tokenizer_path='/models/GLM-5-NVFP4', tp_size={self.tp}, host='0.0.0.0', port={a.port}, "
            "mem_fraction_static=0.88, speculative_algorithm='EAGLE3', speculative_num_steps=3, "
            "cuda_graph_max_bs=160, enable_torch_symm_mem=True, enable_flashinfer_allreduce_fusion=True"
            + (f", nnodes={self.nnodes}, node_rank={self.node_rank}, dist_init_addr={a.dist_init_addr!r}"
               if self.nnodes > 1 else "")
            + ")"
        )
        self.sleep(6)
        self.status("init_distributed", 0.0, _MEM_INIT)
        if a.hang_rank is not None and self._hang_now():
            return self.hang(a.hang_rank)
        self.ranks("Init torch distributed begin.")
        if self.nnodes > 1:
            # SGLang's line for a TP group over several nodes, as quoted in
            # MiaAI-Lab/Qwen3.8-Flash-Next-Dual-DGX-Sparks#3 (a 2-node SGLang bring-up).
            self.ranks("CustomAllreduce is disabled because this process group spans across nodes.")
        if self._should_crash_keyerror():
            self.sleep(8)
            return self.keyerror()
        if self.nnodes > 1 and a.rendezvous:
            self.rendezvous()
        self.sleep(3)
        self.extra("init")
        self.ranks("Init torch distributed ends. mem usage=0.42 GB")
        self.sleep(1)
        self.ranks("Load weight begin. avail mem=93.21 GB")
        self.status("load_weights", 0.0)
        shards = int(a.shards)
        per = 5.18
        for n in range(shards + 1):
            pct = int(100 * n / shards)
            line = f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {n}/{shards} {_tqdm_tail(n, shards, per)}"
            self.progress_line(line, n == shards)
            frac = n / shards
            self.status(progress=frac, memory=_MEM_INIT + (_MEM_WEIGHTS - _MEM_INIT) * frac)
            if a.crash == "segfault" and frac >= 0.3:
                sys.stdout.flush()
                faulthandler.disable()
                signal.signal(signal.SIGSEGV, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGSEGV)
                time.sleep(5)  # the signal is delivered before this returns
            if n < shards:
                self.sleep(per)
        self.extra("weights")
        self.ranks(
            "Load weight end. type=GlmMoeDsaForCausalLM, dtype=torch.bfloat16, avail mem=40.87 GB, mem usage=52.34 GB."
        )
        self.sleep(2)
        self.status("kv_cache", 1.0, _MEM_KV)
        self.ranks("KV Cache is allocated. #tokens: 612352, KV size: 29.83 GB")
        self.ranks("Memory pool end. avail mem=9.61 GB")
        self.sleep(1)
        self.extra("kv")
        self.ranks("Capture cuda graph begin. This can take up to several minutes. avail mem=9.55 GB")
        if a.deepgemm_sm120 and os.environ.get(DEEPGEMM_ENV) != "0":
            self.sleep(2)
            return self.deepgemm_keyerror()
        self.status("cuda_graph", 0.0)
        batches = 23
        for n in range(0, batches, 3):
            bs = 160 - 6 * n
            avail = 9.50 - 0.01 * n
            pct = int(100 * n / batches)
            blocks = "#" * (pct * 8 // 100)
            self.progress_line(
                f"Capturing batches (bs={bs} avail_mem={avail:.2f} GB): {pct:3d}%|{blocks:<8}| {n}/{batches} "
                f"[{_mmss(n)}<{_mmss(batches - n)},  1.05it/s]",
                n + 3 >= batches,
            )
            self.status(progress=n / batches, memory=_MEM_KV + (_MEM_GRAPHS - _MEM_KV) * n / batches)
            self.sleep(3)
        self.extra("graphs")
        self.ranks("Capture cuda graph end. Time elapsed: 31.84 s. mem usage=1.21 GB. avail mem=8.34 GB.")
        self.status(progress=1.0, memory=_MEM_GRAPHS)
        self.sleep(2)
        if not self.head:  # a worker node (--node-rank > 0) serves no HTTP: its schedulers wait for work
            self.ready.set()
            self.state = "ready"
            self.status("ready", 1.0)
            return self.idle()
        self.out(
            f"{self.stamp(0)} max_total_num_tokens=612352, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=512, context_len=202752, available_gpu_mem=8.34 GB"
        )
        self.sleep(1)
        self.status("http", 0.0)
        self.out(f"{self.stamp()} INFO:     Started server process [{os.getpid()}]")
        self.out(f"{self.stamp()} INFO:     Waiting for application startup.")
        self.out(f"{self.stamp()} INFO:     Application startup complete.")
        self.listen()
        self.extra("http")
        self.out(f"{self.stamp()} INFO:     Uvicorn running on http://0.0.0.0:{a.port} (Press CTRL+C to quit)")
        self.sleep(1)
        self.out(f'{self.stamp()} INFO:     127.0.0.1:51234 - "GET /get_model_info HTTP/1.1" 200 OK')
        self.sleep(1)
        self.out(
            f"{self.stamp(0)} Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0"
        )
        self.sleep(1)
        self.out(f'{self.stamp()} INFO:     127.0.0.1:51240 - "POST /generate HTTP/1.1" 200 OK')
        self.ready.set()
        self.state = "ready"
        self.status("ready", 1.0)
        self.out(f"{self.stamp()} The server is fired up and ready to roll!")
        return self.idle()

    def idle(self) -> int:
        """Serve until stopped (or ``--ready-for`` seconds)."""
        a = self.args
        deadline = None if a.ready_for is None else time.monotonic() + a.ready_for
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.5)
        return 0

    def _hang_now(self) -> bool:
        """Hang this time: always, or with ``--hang-once FILE`` only while FILE does not exist (it is made)."""
        once = self.args.hang_once
        if once is None:
            return True
        try:
            with open(once, "x"):
                return True
        except FileExistsError:
            return False

    def hang(self, hang_rank: int) -> int:
        """The hang story: one process per rank (titled as SGLang's schedulers, the even ranks setsid'd);
        rank ``hang_rank`` never leaves NCCL init, the others wait for it at a barrier. Runs until stopped."""
        worker = str(Path(__file__).with_name("rankworker.py"))
        procs = []
        for r in self.my_ranks:
            procs.append(subprocess.Popen(  # noqa: S603 - our own script, argv[0] is the process title
                [f"sglang::scheduler_TP{r}", worker, str(r), str(hang_rank), "1" if r % 2 == 0 else "0"],
                executable=sys.executable, stdin=subprocess.DEVNULL))
            _RANKS.append(procs[-1].pid)
        self.status("init_distributed", 0.0, _MEM_INIT)
        while True:
            time.sleep(1.0)

    def rendezvous(self, limit: float = 120.0) -> None:
        """Wait until every node reached distributed init: node 0 accepts the others at --dist-init-addr,
        then lets them all go (no node's init ends before every node's began, as with torch's TCP store)."""
        host, _, port = str(self.args.dist_init_addr).rpartition(":")
        deadline = time.monotonic() + limit
        if self.head:
            with socket.create_server((host, int(port))) as srv:
                peers: list[socket.socket] = []
                while len(peers) < self.nnodes - 1:
                    srv.settimeout(max(0.01, deadline - time.monotonic()))
                    peers.append(srv.accept()[0])  # socket.timeout past the limit: the server ends with it
                for conn in peers:
                    with conn:
                        conn.sendall(b"go")
            return
        while True:
            try:
                with socket.create_connection((host, int(port)), timeout=max(0.01, deadline - time.monotonic())) as c:
                    if c.recv(2) == b"go":
                        return
            except OSError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.02)

    def _should_crash_keyerror(self) -> bool:
        a = self.args
        if a.crash == "keyerror":
            return True
        if a.sandbox:
            return not _sandbox_has_capability(Path(a.sandbox), int(a.capability))
        return bool(a.enable_torch_symm_mem)

    def keyerror(self) -> int:
        self.state = "crashed"
        self.status("init_distributed")
        for r in self.my_ranks:
            self.out(f"{self.stamp(r)} Scheduler hit an exception: {_TRACEBACK}")
        self.sleep(1)
        self.out(f"{self.stamp()} Received sigquit from a child process. It usually means the child failed.")
        return 1

    def deepgemm_keyerror(self) -> int:
        """DeepGEMM's JIT has no kernels for SM120: the traceback tail as sgl-project/sglang#7227 quotes it."""
        self.state = "crashed"
        self.status("cuda_graph")
        for line in _DEEPGEMM_TAIL.splitlines():
            self.out(line)
        self.sleep(1)
        self.out(f"{self.stamp()} Received sigquit from a child process. It usually means the child failed.")
        return 1


DEEPGEMM_ENV = "SGLANG_ENABLE_JIT_DEEPGEMM"

# The tail of the traceback pasted in sgl-project/sglang#7227 (RTX 5090, SGLang's JIT DeepGEMM path),
# kept as the issue gives it (its paths included); the same text is the corpus case
# tests/corpus/cases/sglang-7227-deepgemm-120a.log. Nothing here is ours.
_DEEPGEMM_TAIL = """\
    deep_gemm_wrapper.gemm_nt_f8f8bf16((A, As), (B, Bs), C)
  File "/home/ubuntuai/sglang/.venv/lib/python3.10/site-packages/sglang/srt/layers/quantization/deep_gemm_wrapper/entrypoint.py", line 89, in gemm_nt_f8f8bf16
    _gemm_nt_f8f8bf16_raw(
  File "/home/ubuntuai/sglang/.venv/lib/python3.10/site-packages/deep_gemm/dispatch.py", line 55, in fp8_gemm_nt
    if must_be_k_major():
  File "/home/ubuntuai/sglang/.venv/lib/python3.10/site-packages/deep_gemm/dispatch.py", line 23, in must_be_k_major
    return {
KeyError: '120a'
"""  # noqa: E501 (quoted text)


_TRACEBACK = f"""Traceback (most recent call last):
  File "{SITE}/managers/scheduler.py", line 2714, in run_scheduler_process
    scheduler = Scheduler(
                ^^^^^^^^^^
  File "{SITE}/model_executor/model_runner.py", line 766, in init_torch_distributed
    initialize_model_parallel(
  File "{SITE}/distributed/parallel_state.py", line 376, in __init__
    self.torch_symm_mem_comm = TorchSymmMemCommunicator(
                               ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{SITE}/distributed/device_communicators/torch_symm_mem.py", line 83, in __init__
    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]
           ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^
KeyError: 12
"""


def _delays(path: str | None) -> dict[str, float]:
    """The ``--delays`` file: step -> real seconds (missing file: none)."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {str(k): float(v) for k, v in data.items()}


def _tqdm_tail(n: int, total: int, per_it: float) -> str:
    """tqdm's "[elapsed<remaining, rate]" for ``n`` of ``total`` at ``per_it`` seconds each."""
    rate = "?it/s" if n == 0 else f"{per_it:.2f}s/it"
    return f"[{_mmss(n * per_it)}<{_mmss((total - n) * per_it)}, {rate}]"


def _mmss(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60:02d}:{s % 60:02d}"


def _sandbox_has_capability(root: Path, capability: int) -> bool:
    """Ask the sandbox module (imported only when used) whether its tables hold ``capability``."""
    return sandbox_has_capability(root, capability)


def _grandchildren(n: int, ignore_sigterm: bool, lifetime: float) -> list[int]:
    """Fork ``n`` workers that leave the session (setsid) and outlive the server (before any thread)."""
    pids: list[int] = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                os.setsid()
                if ignore_sigterm:
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                else:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                with contextlib.suppress(OSError):
                    os.write(1, f"[worker {i}] scheduler worker pid {os.getpid()} started\n".encode())
                time.sleep(lifetime)
            finally:
                os._exit(0)
        pids.append(pid)
    return pids


def _end_all() -> None:
    """SIGKILL this server's rank processes and its process group (itself included): its launcher is gone."""
    for pid in _RANKS:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os.killpg(os.getpgrp(), signal.SIGKILL)


def exit_with(parent: int) -> None:
    """End this server (and its ranks) once process ``parent`` has ended, however it ended (SIGKILL included).

    The demo's launcher (the dashboard) stops its server when it quits; one killed before it could (serve's
    SIGKILL of a tab's dashboard that did not quit in time, a kill -9) left it running for good. A pidfd of
    the parent, not PR_SET_PDEATHSIG: that signal follows the launching *thread*, and a relaunch is made on a
    worker thread that ends right after. A parent gone before the pidfd was open: we were reparented already."""
    if os.getppid() != parent:
        _end_all()
    try:
        fd = os.pidfd_open(parent)
    except ProcessLookupError:
        _end_all()
        return
    if os.getppid() != parent:  # it ended between the two looks: the pidfd may name a process reusing its pid
        _end_all()

    def watch() -> None:
        select.select([fd], [], [])  # readable once the process has ended
        _end_all()

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m symmtui.demo.server", description=__doc__, epilog=DETAILS,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--speed", type=float, default=1.0, help="timeline factor (100 = a 8-minute load in ~5 s)")
    p.add_argument("--host", default="127.0.0.1", help="address to serve /health on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=30000, help="port to serve /health on (default 30000)")
    p.add_argument("--tp", type=int, default=8, help="tensor-parallel ranks (log prefixes TP0..TPn-1)")
    p.add_argument("--nnodes", type=int, default=1, help="nodes the TP group spans (--tp is over all of them)")
    p.add_argument("--node-rank", type=int, default=0,
                   help="this node's rank: its ranks are TP(r*tp/nnodes)..; only rank 0 serves HTTP")
    p.add_argument("--dist-init-addr", default="127.0.0.1:50000",
                   help="shown in server_args; with --rendezvous node 0 listens there for the others")
    p.add_argument("--rendezvous", action="store_true",
                   help="with --nnodes: every node waits in torch distributed init until all nodes reached it "
                        "(over TCP at --dist-init-addr, as torch's init_process_group does)")
    p.add_argument("--shards", type=int, default=83, help="checkpoint shards to load (default 83)")
    p.add_argument("--crash", choices=("keyerror", "segfault", "exit"), help="crash on purpose (see above)")
    p.add_argument("--enable-torch-symm-mem", action="store_true",
                   help="SGLang's flag: crash with the KeyError: 12 of an SM120 host (see above)")
    p.add_argument("--sandbox", help="sandbox dir whose tables decide the KeyError (with --capability)")
    p.add_argument("--capability", type=int, default=12, help="GPU capability major for --sandbox (default 12)")
    p.add_argument("--ignore-sigterm", action="store_true", help="ignore SIGTERM (a stop must SIGKILL)")
    p.add_argument("--grandchildren", type=int, default=0, help="fork N setsid workers that outlive the server")
    p.add_argument("--worker-lifetime", type=float, default=600.0, help="seconds a grandchild lives (default 600)")
    p.add_argument("--delays", metavar="FILE", help="JSON {step: seconds} the log's clock jumps after init/weights/kv/graphs/http")
    p.add_argument("--status-file", help="rewrite this JSON file with state/phase/progress/memory_fraction")
    p.add_argument("--tty-progress", action="store_true", help="carriage-return progress bars, like tqdm")
    p.add_argument("--listen-early", action="store_true", help="open the HTTP port at start (503 until ready)")
    p.add_argument("--hang-rank", type=int, default=None,
                   help="run one process per rank; this rank hangs in NCCL init, the others wait for it")
    p.add_argument("--hang-once", metavar="FILE", default=None,
                   help="with --hang-rank: hang only if FILE does not exist yet (it is created), so a relaunch recovers")
    p.add_argument("--deepgemm-sm120", action="store_true",
                   help=f"die with DeepGEMM's KeyError: '120a' at CUDA-graph capture unless {DEEPGEMM_ENV}=0")
    p.add_argument("--exit-with", metavar="PID", type=int, default=None,
                   help="end (with the rank processes) when process PID, the launcher (the demo's dashboard), ends")
    p.add_argument("--ready-for", type=float, default=None, help="exit 0 this many seconds after ready")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.tp < 1 or args.shards < 1 or args.speed <= 0:
        print("symmtui.demo.server: --tp, --shards and --speed must be positive", file=sys.stderr)
        return 2
    if args.nnodes < 1 or args.tp % args.nnodes or not 0 <= args.node_rank < args.nnodes:
        print("symmtui.demo.server: --nnodes must divide --tp and --node-rank be below it", file=sys.stderr)
        return 2
    if args.grandchildren:
        _grandchildren(args.grandchildren, args.ignore_sigterm, args.worker_lifetime)
    if args.exit_with is not None:  # its thread after the forks (they are made before any thread)
        exit_with(args.exit_with)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        def _term(signum: int, _frame: object) -> None:
            with contextlib.suppress(OSError):
                os.write(1, b"INFO:     Shutting down\n")
            os._exit(128 + signum)

        signal.signal(signal.SIGTERM, _term)
    server = _Server(args)
    try:
        return server.run()
    except OSError as exc:  # as uvicorn reports a port in use
        server.out(
            f"{server.stamp()} ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
            f"{(args.host, args.port)!r}: {(exc.strerror or str(exc)).lower()}"
        )
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
