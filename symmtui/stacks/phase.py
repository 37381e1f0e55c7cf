"""Name the phase a process stands in from its stack and the log together, and what to try for a hang there."""

from __future__ import annotations

import re
from collections.abc import Sequence

from symmtui.core import rules
from symmtui.stacks.model import Frame

NCCL_INIT = "NCCL init"
PEERS = "waiting for peers"
WEIGHTS = "weight loading"
GRAPHS = "CUDA graph capture"
COMPILE = "torch.compile"
WARMUP = "HTTP warm-up"

# Checked from the innermost frame outwards: the first frame that names a phase decides.
_BY_FRAME: tuple[tuple[str, re.Pattern[str]], ...] = (
    (PEERS, re.compile(r"barrier|TCPStore|store_based|_store\.(?:get|wait)|rendezvous|wait_for_workers|"
                       r"monitored_barrier|_wait_for_(?:peers|ready)", re.I)),
    (NCCL_INIT, re.compile(r"ncclCommInit|init_process_group|_new_process_group|new_group|"
                           r"init_distributed_environment|initialize_model_parallel|pynccl|ProcessGroupNCCL|"
                           r"init_torch_distributed|ncclGetUniqueId")),
    (COMPILE, re.compile(r"torch/_dynamo|torch/_inductor|compile_fx|torch\.compile|triton/compiler|"
                         r"\bcompile_(?:or_warm_up|graph)")),
    (GRAPHS, re.compile(r"cuda_graph|CudaGraph|capture_one|graph_capture|cudaStreamBeginCapture|\bcapture\b", re.I)),
    (WEIGHTS, re.compile(r"safetensors|safe_open|load_weights|weight_utils|model_loader|load_model|"
                         r"checkpoint_shard|hf_hub_download|snapshot_download")),
    (WARMUP, re.compile(r"warmup|warm_up|_wait_and_warmup|urllib|http/client|requests/", re.I)),
)

_FROM_LOG = {
    rules.PHASE_INIT_DIST: NCCL_INIT,
    rules.PHASE_LOADING: WEIGHTS,
    rules.PHASE_GRAPHS: GRAPHS,
    rules.PHASE_WARMUP: WARMUP,
    rules.PHASE_HTTP: WARMUP,
}

HINTS = {
    NCCL_INIT: ("NCCL init that never returns: on a PCIe-only host try NCCL_P2P_DISABLE=1 and check IOMMU/ACS "
                "(ACS on PCIe switches breaks P2P); NCCL_DEBUG=INFO shows which peer is missing"),
    PEERS: ("ranks wait for a peer that has not arrived: look at the odd rank's stack; multi-node: every node "
            "started, the init address reachable, NCCL_SOCKET_IFNAME naming the right interface"),
    WEIGHTS: ("weights still loading: check the disk or network filesystem under the model (df, iostat), "
              "free host memory, and that every rank sees the same checkpoint"),
    GRAPHS: ("CUDA graph capture stopped: retry with --disable-cuda-graph (SGLang) or --enforce-eager (vLLM) "
             "to confirm, or lower --cuda-graph-max-bs"),
    COMPILE: ("torch.compile can run for many minutes with no output on a first start: its cache makes the "
              "next start fast; --enforce-eager (vLLM) or no --enable-torch-compile (SGLang) skips it"),
    WARMUP: ("the warm-up request waits for the model: the scheduler stacks above say where; "
             "--skip-server-warmup (SGLang) tells whether the server itself serves"),
}


def phase_of_stack(frames: Sequence[Frame]) -> str | None:
    """The phase the innermost telling frame names (None if no frame names one)."""
    for f in frames:
        text = f"{f.filename} {f.name}"
        for phase, pattern in _BY_FRAME:
            if pattern.search(text):
                return phase
    return None


def phase_of(frames: Sequence[Frame], log_phase: str | None) -> str | None:
    """The stack's phase; where the stack names none, the log's (SGLang/vLLM phase names mapped)."""
    return phase_of_stack(frames) or (_FROM_LOG.get(log_phase) if log_phase else None)


def hint_for(phase: str | None) -> str | None:
    return HINTS.get(phase) if phase else None
