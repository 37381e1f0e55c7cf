"""Shared test settings: no animations, no stray NVML, isolated XDG dirs."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import sysparts

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

# Bytecode is cached (in the gitignored __pycache__ dirs) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE=1): otherwise every `symmtui` child process the tests start compiles the
# whole package again (~0.15 CPU-s each, several hundred children), and every xdist worker re-runs
# pytest's assertion rewriting of every test module (~3 CPU-s each).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# A pytest plugin (pytest-textual-snapshot) imports Textual before this file runs, and Textual reads
# TEXTUAL_ANIMATIONS at import: set the constant too, so every App in the tests starts without animations.
import textual.constants  # noqa: E402

textual.constants.TEXTUAL_ANIMATIONS = "none"  # type: ignore[misc]

# Pilot.press waits, after every key, for the process to look idle: it sleeps in slices of
# SLEEP_GRANULARITY (20 ms) until one passes with under SLEEP_IDLE (1 ms) of CPU. Most of a key-driven
# test's time was those slices: 5 ms slices (the same 10 % idle test) took tests/ui/test_log_view.py
# from 68.8 to 32.7 s alone (-n 0), with the same CPU time (22.8 / 22.2 s) and every test passing.
# (Textual's own module, not its public API: tests/test_textual_wait.py fails if a release renames it.)
import textual._wait  # noqa: E402

textual._wait.SLEEP_GRANULARITY = 0.005
textual._wait.SLEEP_IDLE = 0.0005


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's default): two workers per core on small machines. About half of the suite's
    time is spent waiting on child processes, servers and timeouts; on the 2-core VM 4 workers took 154 s
    where 2 took 209 s, with the same CPU time."""
    cpus = os.cpu_count() or 1
    return 2 * cpus if cpus <= 4 else cpus


# Files whose tests each take many seconds of wall time (real demos in Textual and tmux, a wheel build,
# real releases, many child processes): collected first, so the workers start them first and the run
# does not end waiting on one of them. The rest keep their order; a file's tests stay together.
LONG_FIRST = (
    "tests/ui/test_wheel_themes.py",
    "tests/stacks/test_demo_hang_story.py",
    "tests/patch/test_real_releases.py",
    "tests/ui/test_tmux.py",
    "tests/ui/test_demo_nodes.py",
    "tests/ui/test_demo_story.py",
    "tests/ui/test_demo_fix_story.py",
    "tests/bundle/test_replay.py",
    "tests/ui/test_serve.py",
    "tests/faults/test_fuzz_cli.py",
    "tests/launch/test_session_history.py",
    "tests/stacks/test_dashboard_stacks.py",
    "tests/core/test_scan_serving.py",
    "tests/launch/test_nodes.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything imported and collected so far (pytest, Textual, Hypothesis, every test module: ~150k
    objects) out of the garbage collector's sight. They live for the whole run, and every full collection
    scanned them again (gen-2 collections took 4-11 s of wall time per worker in a 6-worker run)."""
    gc.collect()
    gc.freeze()


_TESTS = Path(__file__).resolve().parent
_BUNDLES_BEFORE: set[Path] = set()


def _bundles_in_tests() -> set[Path]:
    return set(_TESTS.rglob("*.symmtui-bundle.json.gz"))


def pytest_sessionstart(session: pytest.Session) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _BUNDLES_BEFORE.update(_bundles_in_tests())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run must leave the source tree as it found it: bundles go to the (per-test) state dir, but a
    `--bundle` beside a fixture log, or a bundle copied there, would stay in tests/."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    strays = sorted(_bundles_in_tests() - _BUNDLES_BEFORE)
    if strays:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nbundles written into the source tree (judge a copy of the fixture log):", *strays, sep="\n  ")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*parts): system parts the test uses (sshd, chromium, tmux, script): "
                            "skipped with the reason where one is missing, a failure under CI=true (tests/sysparts.py)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.needs(...)``: the one rule for a missing system part, before any fixture starts it."""
    for mark in item.iter_markers("needs"):
        sysparts.require(*mark.args)


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Let go of the dashboards a test started. Textual 8 caches ``StylesCache.get_inner_outer`` with
    ``lru_cache`` on the instance method, so up to 1024 dead widgets' style caches (with every rendered
    strip and its crop caches: ~50k objects per worker) stay alive; each full collection scanned them."""
    styles_cache = sys.modules.get("textual._styles_cache")
    if styles_cache is not None:
        styles_cache.StylesCache.get_inner_outer.cache_clear()


@pytest.fixture(autouse=True)
def _isolated_xdg(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own XDG state/config/data dirs, so no test reads or writes the user's. The cache dir
    is one per worker: it holds only what symmtui remakes from its sources when they differ (the parsed
    catalogues, keyed by their files' paths and times; compiled Hyperscan databases, keyed by their recipe), so
    the symmtui processes a test starts do not each parse the catalogue and compile anew (`symmtui scan` of a
    fixture: 0.14 CPU-s with an empty cache, 0.09 with this one). The tests of those caches set their own."""
    root = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        d = root / var.lower()
        d.mkdir()
        monkeypatch.setenv(var, str(d))
    cache = tmp_path_factory.getbasetemp() / "xdg-cache-home"
    cache.mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    yield root
