"""The log as records of many processes: joined records split, tracebacks from their frames, detail lines after the
exception, the most specific exception of a chain, a crash after READY, readiness from serving evidence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.corpus import read_to_the_end
from symmtui.bringup.scan import scan_file
from symmtui.judge.diagnose import diagnose
from symmtui.judge.events import Event, EventBuilder
from symmtui.judge.ranks import RankBoard
from symmtui.judge.readiness import Readiness, ReadinessConfig, State
from symmtui.judge.rules import Kind
from symmtui.logs.lineparts import split_prefix, split_records

from .engine_kit import KEYERROR_LOG, READY_LOG, ROOT, lines_of

READY_LINES = READY_LOG.read_text().splitlines()
CRASH_LINES = KEYERROR_LOG.read_text().splitlines()

# pytorch/torchtitan#1224, as the issue quotes it: a traceback excerpt (no header) whose exception is NCCL's
# generic "invalid usage" and whose specific reason comes two lines below it.
NCCL_DUPLICATE = """\
[rank2]:   File "/home/less/.conda/envs/pycutlass/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line 3945, in all_gather_into_tensor
[rank2]:     work = group._allgather_base(output_tensor, input_tensor, opts)
[rank2]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
[rank2]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.26.5
[rank2]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
[rank2]: Last error:
[rank2]: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 6000
"""

# vllm-project/vllm#29265, as the issue quotes it: a worker's last words, then the API server's wrapper traceback.
NO_GPU = """\
(EngineCore_DP0 pid=504) ValueError: Current node has no GPU available. current_node_resource={'accelerator_type:T4': 1.0, 'bundle_group_7_5dae406aeb52bbda8836db50069101000000': 999.999, 'memory': 188995160884.0, 'bundle_group_6_5dae406aeb52bbda8836db50069101000000': 999.999, 'node:74.10.28.48': 1.0, 'bundle_group_5dae406aeb52bbda8836db50069101000000': 1999.998, 'CPU': 112.0, 'object_store_memory': 80997926092.0}. vLLM engine cannot start without GPU. Make sure you have at least 1 GPU available in a node current_node_id='25ce3df78af6f2152950b2eb804c59f55b331e21f8c4f92db852228d' current_ip='74.10.28.48'.
(EngineCore_DP0 pid=504) INFO 11-23 11:58:35 [ray_executor.py:121] Shutting down Ray distributed executor. If you see error log from logging.cc regarding SIGTERM received, please ignore because this is the expected termination process in Ray.
(APIServer pid=151) Traceback (most recent call last):
(APIServer pid=151)   File "/usr/local/bin/vllm", line 10, in <module>
(APIServer pid=151)     sys.exit(main())
(APIServer pid=151)              ^^^^^^
(APIServer pid=151)   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/main.py", line 73, in main
(APIServer pid=151)     args.dispatch_function(args)
"""


def _events(text: str) -> tuple[EventBuilder, dict[str, Event]]:
    """Feed every line, then flush; the last version of each keyed event."""
    b = EventBuilder()
    latest: dict[str, Event] = {}
    for line in lines_of(text):
        for ev in b.feed(line):
            latest[ev.key] = ev
    for ev in b.flush():
        latest[ev.key] = ev
    return b, latest


def _state(text: str) -> tuple[State, Readiness]:
    """The readiness verdict of a finished log (events in order, no clock)."""
    b = EventBuilder()
    r = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
    for i, line in enumerate(lines_of(text)):
        for ev in b.feed(line):
            r.feed(ev, float(i))
    for ev in b.flush():
        r.feed(ev, float(len(text)))
    return r.state, r


def _crashes(latest: dict[str, Event]) -> list[Event]:
    return [e for e in latest.values() if e.kind is Kind.CRASH]


def test_two_ranks_records_joined_on_one_line_are_two_records() -> None:
    """Concurrent writers to one pipe join records (seen with torchrun on an H200): each is judged and counted."""
    ends = [ln for ln in READY_LINES if "Load weight end" in ln]
    joined = ends[1] + ends[2]  # TP1's record, then TP2's, on one physical line
    assert split_records(joined) == [ends[1], ends[2]]
    assert [split_prefix(r).key for r in split_records(joined)] == ["TP1", "TP2"]
    assert split_records(ends[0]) == [ends[0]]  # one record: itself
    _, latest = _events("\n".join([*ends[:1], joined, *ends[3:]]))
    ends_ev = [e for e in latest.values() if e.rule_id == "load-weight-end"]
    assert ends_ev  # the phase-end marker is matched in both records of the joined line
    board = RankBoard()
    for rec in (*split_records(ends[0]), *split_records(joined), *(r for ln in ends[3:] for r in split_records(ln))):
        board.feed(rec, 1.0, None, "loading weights")
    assert len(board.states()) == 8 and all(s.finished == "loading weights" for s in board.states())


def test_a_message_quoting_a_stamp_is_not_split() -> None:
    line = "INFO 10-29 06:48:05 [x.py:1] the log said [2026-12-01 08:58:23 TP2] Load weight end."
    assert split_records(line) == [line]  # the line does not itself start with a record prefix of that shape


def test_a_traceback_excerpt_without_its_header_is_the_crash() -> None:
    """A log (or the part symmtui sees) that starts at the frames: the exception after them is the crash."""
    first = CRASH_LINES.index(next(ln for ln in CRASH_LINES if "hit an exception" in ln))
    end = CRASH_LINES.index("KeyError: 12", first)
    excerpt = "\n".join(CRASH_LINES[first + 1 : end + 1])
    _, latest = _events(excerpt)
    (ev,) = _crashes(latest)
    assert ev.summary == "KeyError: 12 at torch_symm_mem.py:83"
    assert ev.diagnosis == "sm120-symm-mem-keyerror"
    assert ev.spans == ((1, end - first),)
    state, r = _state(excerpt)
    assert state is State.CRASHED and r.snapshot(0.0).cause is not None


def test_nccls_last_error_names_the_diagnosis() -> None:
    _, latest = _events(NCCL_DUPLICATE)
    (ev,) = _crashes(latest)
    assert ev.summary.startswith("torch.distributed.DistBackendError: NCCL error in:")
    assert ev.diagnosis == "nccl-duplicate-gpu" and ev.source == "rank2"
    assert ev.block[-1].endswith("Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 6000")
    d = diagnose(ev)
    assert d is not None and "rank 0 and rank 1" in d.cause


def test_a_hard_wrapped_exception_is_read_with_its_next_line() -> None:
    """cloud-barista/cb-tumblebug#2544's exception, cut where an 80-column terminal wraps it."""
    text = ("RuntimeError: The NVIDIA driver on your system is too old (found version 12040). Please update your GPU "
            "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx")
    at = text.index("too old") + len("too")
    lines = [text[:at], text[at:].lstrip()]  # the line broken right after "too", as a narrow terminal may
    tb = ['Traceback (most recent call last):', '  File "/x/torch/cuda/__init__.py", line 410, in _lazy_init',
          "    torch._C._cuda_init()", *lines]
    _, latest = _events("\n".join(tb))
    (ev,) = _crashes(latest)
    assert ev.summary.startswith("RuntimeError: The NVIDIA driver on your system is too at")
    assert ev.diagnosis == "cuda-driver-too-old"


def test_a_workers_last_words_are_the_cause_not_the_wrapper_after_them() -> None:
    state, r = _state(NO_GPU)
    snap = r.snapshot(0.0)
    assert state is State.CRASHED and snap.cause is not None
    assert snap.cause.summary.startswith("ValueError: Current node has no GPU available")
    assert snap.cause.source == "pid504" and "fatal" in snap.cause.roles


def test_the_innermost_specific_exception_of_a_chain_names_it() -> None:
    """sgl-project/sglang#9707 (tests/corpus/cases): ptxas fails inside a chained traceback."""
    log = ROOT / "tests" / "corpus" / "cases" / "sglang-9707-gpt-oss-sm120a-ptxas.log"
    _, latest = _events(log.read_text())
    tb = [e for e in _crashes(latest) if e.rule_id == "traceback"]
    assert tb and tb[0].summary.startswith("subprocess.CalledProcessError: Command")
    assert tb[0].diagnosis == "ptxas-arch-undefined"


def _crash_after_ready(tmp_path: Path) -> Path:
    """A finished SGLang log: fired up, then TP0's scheduler traceback (both from this repo's fixtures)."""
    first = CRASH_LINES.index(next(ln for ln in CRASH_LINES if "hit an exception" in ln))
    end = CRASH_LINES.index("KeyError: 12", first)
    log = tmp_path / "server.log"
    log.write_text("\n".join([*READY_LINES, *CRASH_LINES[first : end + 1]]) + "\n")
    return log


def test_a_crash_after_ready_is_crashed_and_says_how_long_after(tmp_path: Path) -> None:
    log = _crash_after_ready(tmp_path)
    state, r = _state(log.read_text())
    snap = r.snapshot(0.0)
    assert state is State.CRASHED and snap.ready_after is not None and snap.ready_after >= 0
    assert snap.cause is not None and "KeyError: 12" in snap.cause.summary
    assert [p.name for p in snap.phases][-1] == "ready"
    rep = scan_file(log)
    assert rep.verdict == "crashed"


def test_wait_on_a_log_that_holds_a_crash_after_ready_exits_1(tmp_path: Path) -> None:
    log = _crash_after_ready(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--timeout", "10",
                           "--stall", "0", "--no-record"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "CRASHED" in proc.stdout and "after READY" in proc.stdout


def test_a_request_traceback_after_ready_is_recorded_not_a_crash() -> None:
    """An unprefixed traceback after READY (the API server's, for one request) does not end the server."""
    first = CRASH_LINES.index(next(ln for ln in CRASH_LINES if "hit an exception" in ln))
    end = CRASH_LINES.index("KeyError: 12", first)
    request = ["Traceback (most recent call last):", *CRASH_LINES[first + 1 : end + 1]]
    state, r = _state("\n".join([*READY_LINES, *request]))
    assert state is State.READY and r.snapshot(0.0).errors


def test_serving_lines_after_the_start_prove_ready_without_the_marker() -> None:
    """SGLang's start, its warm-up (one prefill, one POST answer), then a user's request: READY at the user's
    request; the warm-up's own lines alone are not evidence."""
    body = [ln for ln in READY_LINES if "fired up" not in ln]
    state, _ = _state("\n".join(body))
    assert state is State.STARTING  # the warm-up's prefill and POST 200 are the warm-up's
    user = '[2024-12-09 16:10:51] INFO:     10.1.1.33:46322 - "POST /v1/chat/completions HTTP/1.1" 200 OK'  # sgl-project/sglang#2418
    state, r = _state("\n".join([*body, user]))
    assert state is State.READY and "answering requests" in r.snapshot(0.0).detail


def test_wait_counts_both_ranks_of_a_joined_line_in_a_real_torchrun_log(tmp_path: Path) -> None:
    """Four torchrun ranks printing to one pipe on the H200 (tests/corpus/cases/torch-h200-joined-records-4-ranks-run2):
    TP0's and TP1's 'Init torch distributed begin' landed on one physical line. The log as it stood when TP0 and
    TP2 had finished initialising (its first lines): TP1 is one of the two still initialising, not missing."""
    real = ROOT / "tests" / "corpus" / "cases" / "torch-h200-joined-records-4-ranks-run2.log"
    lines = real.read_text().splitlines()
    assert "TP0] Init torch distributed begin.[" in lines[4]  # the joined line, as torchrun wrote it
    cut = next(i for i, ln in enumerate(lines) if ln.endswith("TP2] Init torch distributed ends."))
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines[: cut + 1]) + "\n")
    for timeout in (0.3, 0.6, 1.2, 2.4, 4.8):  # until the TIMED OUT block shows the log was read (a loaded machine)
        proc = subprocess.run([sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--timeout", f"{timeout:g}",
                               "--stall", "0", "--no-record"], capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 124, proc.stdout + proc.stderr
        if read_to_the_end(proc.stdout, log):
            break
    ranks = next((ln for ln in proc.stdout.splitlines() if ln.startswith("  ranks: ")), proc.stdout)
    assert ranks.startswith("  ranks: 2/4 ranks finished init distributed; TP1, TP3 still init distributed"), ranks
