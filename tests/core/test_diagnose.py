"""Diagnoses: plain-language cause, next step and the intent a button carries out."""

from __future__ import annotations

import pytest

from symmtui.judge.diagnose import diagnose
from symmtui.judge.events import Event, EventBuilder
from symmtui.judge.rules import Kind

from .engine_kit import KEYERROR_LOG, lines_of


def _event(line: str) -> Event:
    b = EventBuilder()
    out = b.feed_plain(1, line) + b.flush()
    assert out, line
    return out[-1]


def test_keyerror_12_in_symm_mem_tables_offers_the_patch() -> None:
    b = EventBuilder()
    events = [e for ln in lines_of(KEYERROR_LOG.read_text()) for e in b.feed(ln)]
    d = diagnose(next(e for e in events if e.rule_id == "traceback"))
    assert d is not None and d.intent == "patch"
    assert "compute capability 12" in d.cause and "symmetric-memory" in d.cause
    assert "press p" in d.action and "symmtui patch apply" in d.action


def test_other_keyerror_is_not_blamed_on_the_tables() -> None:
    tb = 'Traceback (most recent call last):\n  File "/app/x.py", line 3, in f\n    d[k]\nKeyError: \'model\'\n'
    b = EventBuilder()
    ev = [e for ln in lines_of(tb) for e in b.feed(ln)][0]
    d = diagnose(ev)
    assert d is not None and d.intent is None and "lookup failed" in d.cause


@pytest.mark.parametrize(
    ("line", "words", "intent"),
    [
        ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "architecture", None),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out of memory", "relaunch"),
        ("[rank0]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout", "timed out", "relaunch"),
        ("torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error", "NCCL", "relaunch"),
        ("/bin/sh: line 1: 4821 Killed   python -m sglang.launch_server", "OOM killer", "relaunch"),
        ("Segmentation fault (core dumped)", "native crash", "relaunch"),
        ("Received sigquit from a child process. It usually means the child failed.", "own error is named instead of this line", None),
        ("TorchSymmMemCommunicator: Device capability 12 not supported, communicator is not available.",
         "silently off", "patch"),
        ("torch symmetric memory multicast operations are not supported.", "PCIe", None),
    ],
)
def test_line_diagnoses(line: str, words: str, intent: str | None) -> None:
    d = diagnose(_event(line))
    assert d is not None
    assert words in d.cause + " " + d.action
    assert d.intent == intent


def test_address_in_use_names_the_holder_it_is_given() -> None:
    ev = _event("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use")
    d = diagnose(ev)
    assert d is not None and "port 30000" in d.cause and "symmtui stop" in d.action and d.intent == "stop"
    d = diagnose(ev, port_owner=lambda port: f"pid 4242 (python -m sglang.launch_server --port {port})")
    assert d is not None and "pid 4242" in d.cause and "30000" in d.cause


def test_process_exit_and_nothing_for_phases() -> None:
    ev = Event(Kind.CRASH, "process_exit", "process exited with code 1 before it was ready", 0, "",
               diagnosis="process_exit")
    d = diagnose(ev)
    assert d is not None and "printed no error" in d.cause
    assert diagnose(Event(Kind.PHASE, "load_weight_begin", "loading weights", 1, "")) is None


@pytest.mark.parametrize(
    ("summary", "words"),
    [("process killed by signal 9 (SIGKILL) before it was ready", "OOM killer"),
     ("process killed by signal 11 (SIGSEGV) before it was ready", "native crash (SIGSEGV)")],
)
def test_silent_deaths_by_signal(summary: str, words: str) -> None:
    d = diagnose(Event(Kind.CRASH, "process_exit", summary, 0, "", diagnosis="process_exit"))
    assert d is not None and words in d.cause and d.intent == "relaunch"
