"""Every verb (stacks included) as a real child process with hostile values (hypothesis, derandomized): FIFOs, devices,
directories and missing paths; huge, NaN and negative numbers; long strings and odd bytes.

Whatever the input: an exit code from the documented set, no traceback, bounded time (the child's
timeout) and memory (RLIMIT_AS), stderr lines bounded and a usage error exactly one line, and no
raw escape byte on either stream.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.hostile_kit import EXIT_CODES, MAX_ERROR_CHARS, run_cli

CHILD_TIMEOUT = 60  # seconds: far above any bounded run here (they take about 1 s), far below a hang
EXAMPLES_PER_VERB = int(os.environ.get("SYMMTUI_FUZZ_EXAMPLES", "5"))


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hostile things on disk, made once: a FIFO with no writer, a directory, a binary file, a symlink
    loop, a profile that launches a short-lived command, state and config dirs."""
    root = tmp_path_factory.mktemp("arena")
    os.mkfifo(root / "fifo")
    os.mkfifo(root / "fifo.json")
    (root / "dir").mkdir()
    (root / "binary.log").write_bytes(b"\x00\xff\xfe\x1b]0;x\x07" * 1000 + b"\n")
    (root / "loop").symlink_to(root / "loop")
    (root / "symmtui.toml").write_text(
        f'[server]\ncommand = ["/bin/sh", "-c", "exit 3"]\nlog_dir = "{root}/logs"\ntimeout = 5\n')
    (root / "state").mkdir()
    (root / "config").mkdir()
    return root


PATHS = st.sampled_from(["fifo", "fifo.json", "dir", "binary.log", "loop", "missing/x.log", "/dev/zero",
                         "/dev/null", "/proc/self/mem", "/dev/stdin", "symmtui.toml"])
NUMBERS = st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1e308", "1e-320", "99999999999", "-0", "",
                           "0x10", "1_000", "12abc", "٣"])
STRINGS = st.one_of(
    st.integers(1000, 100_000).map(lambda n: "x" * n),
    st.sampled_from(["\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m", "a\nb", "-", "--", "é" * 2000, "%s%n"]),
    st.binary(min_size=1, max_size=40).filter(lambda b: b"\x00" not in b).map(os.fsdecode),
)
VALUES = st.one_of(PATHS, NUMBERS, STRINGS)

# verb -> (options that take a value, flags, what is always appended to keep a valid run bounded)
VERBS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "wait": (("--log", "--url", "--pid", "--ready", "--crash", "--timeout", "--stall", "--config"),
             ("--new-only",), ("--timeout", "2")),
    "scan": (("--ready", "--crash"), ("--json",), ()),
    "gpus": (("--standin", "--interval"), ("--json", "--topo", "--no-topo", "--debug"), ()),
    "patch": (("--site", "--package", "--capability", "--python"), ("--json", "--force"), ()),
    "launch": (("--config", "--timeout", "--stall", "--grace"), ("--no-preflight", "--strict-preflight"),
               ("--timeout", "5")),
    "stop": (("--config", "--grace", "--kill-pid", "--gpu-timeout", "--port-timeout"), (),
             ("--grace", "1", "--gpu-timeout", "1", "--port-timeout", "1")),
    "stacks": (("--config", "--pid", "--log", "--limit"), ("--json", "--no-save"), ()),
    "demo": (("--speed", "--theme"), (), ()),
    "": (("--config", "--log", "--url", "--theme"), (), ()),  # the dashboard
}


@st.composite
def argv_for(draw: st.DrawFn, verb: str) -> list[str]:
    options, flags, tail = VERBS[verb]
    args: list[str] = [verb] if verb else []
    if verb == "scan":
        args.append(draw(VALUES))
    if verb == "patch":
        args.append(draw(st.sampled_from(["check", "diff", "apply", "revert", "nope"])))
    for _ in range(draw(st.integers(1, 3))):
        args += [draw(st.sampled_from(options)), draw(VALUES)]
    args += draw(st.lists(st.sampled_from(flags), max_size=2, unique=True)) if flags else []
    if verb in ("launch", "stop") and "--config" not in args:
        args += ["--config", "symmtui.toml"]
    return args + list(tail)


def _check(r: subprocess.CompletedProcess[bytes], argv: list[str]) -> None:
    err = r.stderr.decode("utf-8", "replace")
    shown = f"argv={[a[:60] for a in argv]} rc={r.returncode} stderr={err[-1500:]!r}"
    assert r.returncode in EXIT_CODES, shown
    assert "Traceback" not in err and "Error:" not in err.replace("symmtui: error:", ""), shown
    lines = err.splitlines()
    assert all(len(line) <= MAX_ERROR_CHARS for line in lines), shown
    assert all(line.startswith("symmtui") or line.startswith("  ") or not line for line in lines), shown
    if r.returncode == 2:
        assert len(lines) == 1 and lines[0].startswith("symmtui: error: "), shown
    for stream in (r.stdout, r.stderr):
        for raw in (b"\x1b", b"\x07", "\x9b".encode()):
            assert raw not in stream, shown


@pytest.mark.parametrize("verb", list(VERBS), ids=lambda v: v or "dashboard")
def test_every_verb_survives_hostile_values(arena: Path, verb: str) -> None:
    env = {"XDG_STATE_HOME": str(arena / "state"), "XDG_CONFIG_HOME": str(arena / "config"),
           "SYMMTUI_NVML_STANDIN": ""}

    @settings(max_examples=EXAMPLES_PER_VERB, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(argv_for(verb))
    def run(argv: list[str]) -> None:
        r = run_cli(*argv, env=env, cwd=arena, timeout=CHILD_TIMEOUT)
        _check(r, argv)

    run()
