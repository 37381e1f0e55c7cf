"""Name the phase a process stands in from its stack and the log together; what to try there comes from the catalogue."""

from __future__ import annotations

import re
from collections.abc import Sequence

from symmtui.judge import rules
from symmtui.judge.rules import RuleSet
from symmtui.stacks.model import Frame, Hint
from symmtui.tables import enginetable
from symmtui.tables.catalogue import hang_text

NCCL_INIT = rules.HANG_NCCL_INIT
PEERS = rules.HANG_PEERS
WEIGHTS = rules.HANG_WEIGHTS
GRAPHS = rules.HANG_GRAPHS
COMPILE = rules.HANG_COMPILE
WARMUP = rules.HANG_WARMUP

# Checked from the innermost frame outwards: the first frame that names a phase decides.
_BY_FRAME: tuple[tuple[str, re.Pattern[str]], ...] = (
    (PEERS, re.compile(r"barrier|TCPStore|store_based|_store\.(?:get|wait)|rendezvous|wait_for_workers|"
                       r"monitored_barrier|_wait_for_(?:peers|ready)|"
                       # a collective: a rank there waits for the peer that has not joined it
                       r"all_reduce|allreduce|all_gather|allgather|reduce_scatter|all_to_all|alltoall|broadcast", re.I)),
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


def engine_of(frames: Sequence[Frame], cmdline: str = "") -> str | None:
    """The engine (a name of the engine table) whose code the stack's files are, or whose server the command line
    runs, else None."""
    table = enginetable.table()
    for f in frames:
        name = table.by_path(f.filename)
        if name is not None:
            return name
    return table.by_command(cmdline) if cmdline else None


def hints_for(phase: str | None, ruleset: RuleSet | None = None, engine: str | None = None) -> tuple[Hint, ...]:
    """What to try for a hang in ``phase``: the catalogue's entries of kind "hang" (the user's first)."""
    rs = ruleset if ruleset is not None else RuleSet()
    return tuple(Hint(r.id, hang_text(r), r.source) for r in rs.hang_hints(phase, engine))
