"""User patterns cannot freeze a verb, whatever their shape (a property, hypothesis): nested quantifiers and
alternations that backtrack for ever in Python's ``re`` (the hostile re-test's ``(a+){10}$``, ``(?:a+){3}$``,
``(?:\\w+){8}$``, six ``(.*)`` groups, ``(\\w|\\w)*$``, ``(a|aa)*$`` and random nestings of them) as a user catalogue
entry and as ``--ready``, against adversarial lines (long runs of one letter that a trailing ``$`` or ``!`` can
never accept, word runs, a 64 KiB line). Real child processes: ``symmtui wait --timeout 2`` ends within a
generous bound with its verdict; a ``wait`` SIGTERMed while it judges such lines exits 143 promptly.

Constructed input (labelled so): the patterns and lines are made to be hostile, not taken from a log.
Derandomized; ``SYMMTUI_FUZZ_EXAMPLES=40`` for a longer run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from symmtui.patterns import PatternError, compile_user, matches_every_line
from tests.faults.hostile_kit import ROOT

EXAMPLES = int(os.environ.get("SYMMTUI_FUZZ_EXAMPLES", "8"))
BOUND = 60.0  # seconds `wait --timeout 2` may take in all on a loaded 2-core machine (one 64 KiB line costs ~5 s
# with the costliest shapes; Python's re took hours to for ever on the 40-letter line)
SIGTERM_BOUND = 30.0

KNOWN = [r"(a+){10}$", r"(?:a+){3}$", r"(?:\w+){8}$", r"(.*)(.*)(.*)(.*)(.*)(.*)$", r"(\w|\w)*$", r"(a|aa)*$",
         r"ERRX (\w+\s?)*$", r"(a|a?)+$", r"\w*\w*\w*\w*\w*\w*\w*\w*$", r"(?P<x>.*a){1000}z", r"((a|b)*a(a|b){200}c)"]
ATOMS = st.sampled_from(["a", r"\w", ".", "a?", "(a|aa)", r"(\w|\w)", r"\s?", "[ab]", "(?:a|b)"])
QUANTIFIERS = st.sampled_from(["+", "*", "?", "{10}", "{1,60}", "{3}", "{2,}", ""])


def _nest(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    group = st.tuples(st.sampled_from(["(", "(?:"]), children, QUANTIFIERS).map(lambda t: f"{t[0]}{t[1]}){t[2]}")
    concat = st.lists(children, min_size=2, max_size=4).map("".join)
    alternation = st.lists(children, min_size=2, max_size=3).map("|".join).map(lambda s: f"(?:{s})")
    return st.one_of(group, concat, alternation)


NESTED = st.recursive(st.tuples(ATOMS, QUANTIFIERS).map("".join), _nest, max_leaves=12)
# A leading letter keeps most drawn patterns from matching every line (refused, exit 2: drawn too, less often).
PATTERNS = st.tuples(st.sampled_from(["a", "a", "ERRX ", ""]),
                     st.one_of(st.sampled_from(KNOWN), st.tuples(NESTED, st.sampled_from(["$", "!", "z", ""])).map("".join))
                     ).map("".join)
LINES = st.one_of(
    st.integers(min_value=20, max_value=4000).map(lambda n: "a" * n + "!"),
    st.integers(min_value=5, max_value=2000).map(lambda n: "ab " * n + "!"),
    st.integers(min_value=5, max_value=2000).map(lambda n: "ERRX " + "ab " * n + "!"),
    st.just("a" * 65000 + "!"),
    st.just("a" * 65000 + "z"),
    st.text(alphabet="ab !\t", min_size=1, max_size=3000),
)


def _usable(pattern: str) -> bool:
    """Whether symmtui takes it: RE2 compiles it (a generated repeat of a repeat may pass RE2's 1000-repeat limit)
    and it does not match every line (``(a|aa)*$`` matches the empty one); otherwise one line, exit 2."""
    try:
        return not matches_every_line(compile_user(pattern))
    except PatternError:
        return False


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_STATE_HOME": str(home / "state"), "XDG_CACHE_HOME": str(home / "cache")}
    env.pop("SYMMTUI_DEBUG", None)
    return env


def _write(home: Path, pattern: str, lines: list[str]) -> Path:
    (home / "config" / "symmtui").mkdir(parents=True, exist_ok=True)
    (home / "config" / "symmtui" / "catalogue.toml").write_text(  # (no pattern drawn holds a quote)
        f"[[entry]]\nid = \"hostile\"\nkind = \"crash\"\npatterns = ['''{pattern}''']\n")
    log = home / "server.log"
    log.write_text("[2026-01-01 00:00:00] server starting\n" + "".join(f"{ln}\n" for ln in lines))
    return log


def _catches_sigterm(pid: int) -> bool:
    """Whether the child has installed symmtui's SIGTERM handler (it is past its start, judging)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except OSError:
        return False
    return False


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entry=PATTERNS, ready=PATTERNS, lines=st.lists(LINES, min_size=1, max_size=6))
def test_no_user_pattern_keeps_wait_past_its_deadline_or_from_ending_on_sigterm(
        entry: str, ready: str, lines: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="symmtui-patterns-") as tmp:
        home = Path(tmp)
        log = _write(home, entry, lines)
        usable = _usable(entry) and _usable(ready)
        argv = [sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--ready", ready, "--no-record"]
        started = time.monotonic()
        timed = subprocess.Popen([*argv, "--timeout", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, env=_env(home))
        termed = subprocess.Popen([*argv, "--timeout", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, env=_env(home))
        try:
            while not _catches_sigterm(termed.pid) and termed.poll() is None:
                assert time.monotonic() - started < BOUND, "the SIGTERMed wait never got going"
                time.sleep(0.02)
            if termed.poll() is None:
                os.kill(termed.pid, signal.SIGTERM)
                sent = time.monotonic()
                code = termed.wait(SIGTERM_BOUND)  # raises TimeoutExpired (a failure) past the bound
                # 143; or it had its verdict first (READY, CRASHED), or refused the pattern (2, one line)
                assert code in ((143, 0, 1) if usable else (143, 2)), (code, termed.stderr.read() if termed.stderr else b"")
                assert code != 143 or time.monotonic() - sent < SIGTERM_BOUND
            out, err = timed.communicate(timeout=BOUND)
        finally:
            for proc in (timed, termed):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        elapsed = time.monotonic() - started
        event(f"wait exit {timed.returncode}")  # --hypothesis-show-statistics: how often each outcome was reached
        assert b"Traceback" not in err and b"internal error" not in err, err[-1500:]
        if not usable:
            assert timed.returncode == 2 and len(err.splitlines()) == 1, err[-1500:]
            return
        assert timed.returncode in (0, 1, 124), (timed.returncode, err[-1500:])
        verdict = {0: b"READY", 1: b"CRASHED", 124: b"TIMED OUT after 2.0 s"}[timed.returncode]
        assert verdict in out, out[-500:]
        assert elapsed < BOUND, elapsed


def test_a_pattern_that_is_not_utf8_gets_one_line_and_exit_2(tmp_path: Path) -> None:
    """A byte the shell passes that is not UTF-8 (the fuzz found `--ready $'\\x80'` ended in an internal error)."""
    log = _write(tmp_path, "never", ["a line"])
    r = subprocess.run([sys.executable.encode(), b"-m", b"symmtui", b"scan", os.fsencode(log), b"--ready", b"ab\x80"],
                       capture_output=True, text=True, env=_env(tmp_path), cwd=ROOT, timeout=120, check=False)
    assert r.returncode == 2, r.stderr
    [line] = r.stderr.splitlines()
    assert "bad ready pattern" in line and "\\x80, which is not UTF-8 text" in line and "internal error" not in line
    with pytest.raises(PatternError, match="U\\+D800"):
        compile_user("x\ud800")  # a lone surrogate that stands for no byte


def test_a_sigterm_the_moment_the_handler_is_in_always_ends_wait(tmp_path: Path) -> None:
    """SIGTERM sent as soon as `wait` catches it, while its verb still imports: 143 every time. msgspec's C init
    cleared the Terminated raised inside its imports, and 17 of 40 such `wait`s then ran on, deaf to SIGTERM."""
    log = _write(tmp_path, "never", ["a line"])
    argv = [sys.executable, "-m", "symmtui", "wait", "--log", str(log), "--ready", "never", "--no-record", "--timeout", "600"]
    codes = []
    for i in range(20):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=_env(tmp_path))
        try:
            while not _catches_sigterm(proc.pid) and proc.poll() is None:
                time.sleep(0.001 * (i % 7))  # 0-6 ms: the signal lands at points along the start-up's imports
            proc.send_signal(signal.SIGTERM)
            codes.append(proc.wait(SIGTERM_BOUND))  # raises TimeoutExpired (a failure) when it ran on
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert codes == [143] * 20, codes


_DROPPED = """
import os, signal, sys, time
from symmtui import boundary
boundary.stop_on_signals()
class Dropped:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs in here, where Python drops what is raised
        for _ in range(1000):
            pass
try:
    Dropped()
    for _ in range(100):
        time.sleep(0.1)
    print("ran on")
except KeyboardInterrupt as exc:
    sys.exit(boundary.interrupted_code(exc))
"""


def test_a_sigterm_whose_handler_lands_in_a_finalizer_still_ends_the_verb() -> None:
    """The handler's Terminated raised in a ``__del__`` (importlib's module-lock callback, in the wild) is not lost."""
    r = subprocess.run([sys.executable, "-c", _DROPPED], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert (r.returncode, r.stdout, r.stderr) == (143, "", "")
