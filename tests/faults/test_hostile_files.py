"""Every file symmtui reads from outside, driven with hostile content by hypothesis: the launch history, a user
catalogue, a launch profile and a bundle. The property for each: the verb that reads it ends with an exit
code from the documented set, a failure is one bounded `symmtui: error:` line and never an "internal error"
(a bug) or a traceback, and what is read is bounded by its caps (size, lines, nesting) before any work.

In-process (`symmtui.cli.main`) so that many inputs take seconds; the same readers as child processes,
with FIFOs and devices, are in test_blocking_opens.py and test_fuzz_cli.py."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from symmtui.cli import main
from symmtui.launch.history import history_path
from symmtui.tables.catalogue import user_file
from tests.faults.hostile_kit import EXIT_CODES, MAX_ERROR_CHARS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = 60
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def run_verb(*argv: str, ok: frozenset[int] = EXIT_CODES) -> tuple[int, str, str]:
    """Run a verb in this process; assert the documented outcome; return (code, stdout, stderr)."""
    with _captured() as (out, err):
        code = main(list(argv))
    text = err.getvalue()
    assert code in ok, (code, text[-2000:])
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    errors = [ln for ln in text.splitlines() if ln.startswith("symmtui: error: ")]
    if code == 2:
        assert len(errors) == 1, text[-2000:]
    assert all(len(ln) <= MAX_ERROR_CHARS for ln in errors)
    event(f"{argv[0]} exit {code}")  # --hypothesis-show-statistics: how often each outcome was reached
    return code, out.getvalue(), text


# ------------------------------------------------------------------ strategies

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                    max_leaves=20)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# Regexes a user may write, ones that backtrack for ever in Python's re among them (RE2 runs them in linear
# time), ones RE2 refuses (a back-reference, a look-ahead), and broken ones.
PATTERNS = st.one_of(
    st.sampled_from([r"ERRX (\w+\s?)*$", r"(a+)+$", r"(a|aa)*b", r"([a-z]+)*x", r"(?:\w+\.)*Error",
                     r"Stale file handle", r"(", r"x*", r"", r"(?P<n>\d+) of (?P=n)", r"\b(?i:fatal)\b", r"x(?=y)", r"(a+){10}$",
                     r"a{1,100000}", "(" * 300 + ")" * 300, r"[\x00-\uffff]+z", "\\"]),
    st.text(max_size=30),
)


VALID_ENTRY: dict[str, Any] = {"id": "our-nfs-stall", "kind": "crash", "patterns": ["Stale file handle"],
                               "cause": "the model share went away", "action": {"type": "investigate", "text": "remount"}}
ENTRY_VALUES: dict[str, Any] = {
    "id": st.one_of(st.just("user-x"), st.text(max_size=12)),
    "kind": st.sampled_from(["crash", "warning", "ready", "phase", "hang", "info", "oops"]),
    "patterns": st.one_of(st.lists(PATTERNS, max_size=3), st.just(["p"] * 65), st.just(["x" * 5000])),
    "context": st.lists(PATTERNS, max_size=2),
    "cause": st.sampled_from(["", "c", "c {nope}", "{summary} at {port}", "{", "{n} of them"]),
    "action": st.sampled_from([None, {"type": "investigate", "text": "t"}, {"type": "env", "text": "t", "env": "X", "value": "1"},
                               {"type": "flag_add", "text": "t", "flag": "bad flag"}, {"type": "nope"}, "nope"]),
    "phase": st.sampled_from([None, "loading weights", "nope"]),
    "scope": st.sampled_from(["line", "exception", "exit", "everything", 3]),
    "roles": st.sampled_from([["fatal"], ["x"], "fatal"]),
    "engine": st.sampled_from(["sglang", "vllm", "any", "tgi"]),
    "colour": st.just("red"),
}


@st.composite
def catalogue_texts(draw: st.DrawFn) -> str:
    """A user catalogue: a good entry with a few keys given hostile values, unknown keys, broken TOML, deep
    nesting, too many entries."""
    kind = draw(st.sampled_from(["entries", "entries", "entries", "raw", "deep", "many"]))
    if kind == "raw":
        return draw(st.text(max_size=300))
    if kind == "deep":
        return f"x = {_deep(draw(st.integers(min_value=1, max_value=5000)))}\n"
    if kind == "many":
        n = draw(st.sampled_from([1001, 1500]))
        return "".join(f'[[entry]]\nid = "e{i}"\nkind = "info"\npatterns = ["m{i}x"]\n' for i in range(n))
    lines = []
    for i in range(draw(st.integers(min_value=1, max_value=3))):
        entry = {**VALID_ENTRY, "id": f"user-{i}"}
        for key in draw(st.lists(st.sampled_from(sorted(ENTRY_VALUES)), max_size=2, unique=True)):
            entry[key] = draw(ENTRY_VALUES[key])
        lines.append("[[entry]]")
        lines += [f"{json.dumps(k)} = {_toml(v)}" for k, v in entry.items() if v is not None]
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(value), repr(value))
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return "'''" + value.replace("'''", "") + "'''" if "\n" not in value and "'" not in value else json.dumps(value)
    return json.dumps(value)


@st.composite
def history_texts(draw: st.DrawFn) -> bytes:
    """History lines: well-formed entries with hostile field values, random JSON, bytes, long and deep lines."""
    lines: list[bytes] = []
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        kind = draw(st.sampled_from(["entry", "json", "bytes", "deep", "long"]))
        if kind == "entry":
            entry = {"launch_id": draw(st.text(max_size=8)), "command_hash": "h",
                     "start": draw(st.one_of(st.floats(), st.integers(), st.text(max_size=5))),
                     "end": draw(st.one_of(st.none(), st.floats(), st.integers(min_value=-(1 << 64), max_value=1 << 64))),
                     "verdict": draw(st.sampled_from(["ready", "crashed", "stopped", "weird", ""])),
                     "phases": draw(st.one_of(st.dictionaries(st.text(max_size=8), st.floats(), max_size=3), JSON)),
                     "versions": draw(st.one_of(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2), JSON)),
                     "cause": draw(st.one_of(st.none(), st.text(max_size=20), JSON)),
                     "facts": draw(st.one_of(st.none(), JSON, st.fixed_dictionaries(
                         {k: JSON for k in ("command", "flags", "env", "files", "gpus", "model", "more")}))),
                     "named": draw(st.one_of(st.none(), JSON))}
            lines.append(json.dumps(entry).encode())
        elif kind == "json":
            lines.append(json.dumps(draw(JSON)).encode())
        elif kind == "bytes":
            lines.append(draw(st.binary(max_size=60)).replace(b"\n", b" "))
        elif kind == "deep":
            lines.append(_deep(draw(st.integers(min_value=1, max_value=100_000))).encode())
        else:
            lines.append(b'{"launch_id": "' + b"x" * draw(st.integers(min_value=60_000, max_value=200_000)) + b'"}')
    return b"\n".join(lines) + b"\n"


# ------------------------------------------------------------------ the properties


@pytest.fixture
def log(tmp_path: Path) -> Path:
    copy = tmp_path / "server.log"
    shutil.copy(FIXTURES / "sglang-tp8-symm-mem-keyerror.log", copy)
    return copy


@SETTINGS
@given(text=history_texts())
def test_any_history_file_gives_a_table_or_json_never_a_bug(text: bytes) -> None:
    path = history_path()
    path.write_bytes(text)
    for argv in (["history"], ["history", "--json"], ["history", "--diff"], ["history", "--diff", "--json"]):
        code, out, _err = run_verb(*argv, ok=frozenset({0}))
        if "--json" in argv:
            doc = json.loads(out)
            assert isinstance(doc, dict)


@SETTINGS
@given(text=catalogue_texts())
def test_any_user_catalogue_is_used_or_refused_in_one_line(text: str, log: Path) -> None:
    path = user_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    code, _out, err = run_verb("scan", str(log), ok=frozenset({1, 2}))  # crashed, or the catalogue refused
    if code == 2:
        assert "catalogue" in err or "user catalogue" in err, err
    assert "exponential" not in err  # RE2 runs any shape in linear time: none is refused for it


PROFILE_VALUES: dict[str, Any] = {
    "command": st.one_of(st.just(["python", "-m", "x"]), st.just("python -m x 'unclosed"), st.text(max_size=20),
                         st.lists(st.text(max_size=8), max_size=3), st.integers()),
    "log_dir": st.sampled_from(["logs", "/dev/zero", "", "a\x00b", 3]),
    "log": st.sampled_from(["server.log", "/dev/zero", "", "missing/dir/x.log"]),
    "url": st.sampled_from(["http://127.0.0.1:30000/health", "http://[::1/x", "ftp://x", "http://127.0.0.1:0/", "", 5]),
    "timeout": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(1 << 70), max_value=1 << 70),
                         st.text(max_size=4)),
    "stall": st.one_of(st.floats(), st.integers(min_value=-10, max_value=1 << 40)),
    "grace": st.one_of(st.floats(), st.booleans()),
    "shell": st.one_of(st.booleans(), st.text(max_size=4)),
    "log_cmd": st.sampled_from(["ssh node 'tail -F x'", "", "'unclosed"]),
    "nope": st.just(1),
}


@st.composite
def profile_texts(draw: st.DrawFn) -> str:
    """A launch profile: a good one with a few keys given hostile values, extra tables, broken TOML, deep nesting."""
    kind = draw(st.sampled_from(["server", "server", "server", "raw", "deep"]))
    if kind == "raw":
        return draw(st.text(max_size=200))
    if kind == "deep":
        return f"[server]\ncommand = {_deep(draw(st.integers(min_value=1, max_value=5000)))}\n"
    server: dict[str, Any] = {"command": ["python", "-m", "x"], "log_dir": "logs", "url": "http://127.0.0.1:30000/health"}
    for key in draw(st.lists(st.sampled_from(sorted(PROFILE_VALUES)), max_size=2, unique=True)):
        server[key] = draw(PROFILE_VALUES[key])
    lines = ["[server]", *(f"{k} = {_toml(v)}" for k, v in server.items())]
    lines += draw(st.sampled_from([[], [], ["[server.env]", "A = 1"], ["[server.env]", "A = [1]"],
                                   ["[rules]", "ready = ['(a+)+$']"], ["[rules]", "ready = ['ok']"], ["[[nodes]]", "name = 3"],
                                   ["[[rules.entry]]", "id = 'x'"], ["[notify]", "on = 'x'"]]))
    return "\n".join(lines) + "\n"


@SETTINGS
@given(text=profile_texts())
def test_any_profile_is_loaded_or_refused_in_one_line(text: str, tmp_path: Path) -> None:
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text(text)
    run_verb("history", "--config", str(cfg), ok=frozenset({0, 2}))  # reads the profile, starts nothing


# ------------------------------------------------------------------ bundles


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real bundle's document: the crash log recorded by the real recorder (no process needed)."""
    from symmtui.bringup.engine import EngineUpdate
    from symmtui.bundle.recorder import Recorder
    from symmtui.judge.board import board_of
    from symmtui.judge.verdict import NodeView
    from symmtui.launch.envinfo import EnvInfo
    from symmtui.session.messages import EngineBatch, VerdictReached
    from tests.ui.kit import CRASH_LOG, read_lines, replay

    lines = read_lines(CRASH_LOG)
    events, snap = replay(lines)
    rec = Recorder(name="t", host="h", command=None, dest=tmp_path_factory.mktemp("rec") / "b.json.gz",
                   env=lambda: EnvInfo(taken_at=0.0, symmtui="test"))
    verdict = board_of([NodeView("h", snap)])
    rec.ingest(0.5, EngineBatch("h", EngineUpdate(tuple(lines), tuple(events), (), snap), str(CRASH_LOG), verdict))
    rec.ingest(1.0, VerdictReached(verdict, 0, None, str(CRASH_LOG)))
    doc: dict[str, Any] = json.loads(json.dumps(rec.document(final=True)))
    return doc


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Where a value can be replaced: every key and the first items of lists, four levels down (the
    records' own fields: a verdict's cause, a phase, an event's tag)."""
    out = [prefix]
    if len(prefix) >= 4:
        return out
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            out += _paths(v, (*prefix, i))
    return out


@SETTINGS
@given(data=st.data())
def test_any_bundle_is_reported_or_refused_in_one_line(data: st.DataObject, recorded: dict[str, Any],
                                                       tmp_path: Path) -> None:
    doc = json.loads(json.dumps(recorded))
    spots = _paths(doc)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        where = data.draw(st.sampled_from(spots[1:]))
        node = doc
        for key in where[:-1]:  # an earlier replacement may have changed the way down: then nothing here
            if isinstance(node, dict):
                node = node.get(key)
            elif isinstance(node, list) and isinstance(key, int) and key < len(node):
                node = node[key]
            else:
                node = None
            if node is None:
                break
        last = where[-1]
        if isinstance(node, dict) or (isinstance(node, list) and isinstance(last, int) and last < len(node)):
            node[where[-1]] = data.draw(st.one_of(JSON, st.just(json.loads(_deep(60)))))
    raw = json.dumps(doc).encode()
    form = data.draw(st.sampled_from(["gzip", "plain", "cut", "bytes"]))
    blob = {"gzip": gzip.compress(raw), "plain": raw, "cut": gzip.compress(raw)[: len(raw) // 3],
            "bytes": data.draw(st.binary(max_size=200))}[form]
    path = tmp_path / "x.symmtui-bundle.json.gz"
    path.write_bytes(blob)
    run_verb("report", str(path), ok=frozenset({0, 2}))
    from symmtui.bundle.format import BundleError, read_bundle
    from symmtui.bundle.replay import Recording

    try:
        bundle = read_bundle(path)
    except BundleError:
        return
    with contextlib.suppress(BundleError):  # the replay verb's one line (exit 2); anything else is a bug
        Recording(bundle)


@pytest.mark.parametrize("field", ["gpu", "topology", "events", "snapshots"])
def test_replay_of_a_bundle_with_a_field_of_the_wrong_shape_is_one_line(recorded: dict[str, Any], tmp_path: Path,
                                                                        field: str) -> None:
    """A hand-edited bundle (`"gpu": "x"`, `"topology": "x"`, ...): `replay` refuses it in one line before any
    screen (it raised AttributeError: 'internal error'), or plays it without the damaged part (a topology that is
    not one is "not recorded"; a Textual traceback drew it on the screen)."""
    from symmtui.bundle.format import BundleError, read_bundle
    from symmtui.bundle.replay import Recording

    doc = json.loads(json.dumps(recorded))
    doc[field] = "x" if field != "events" else [[0.1, 0, "x"], "y"]
    path = tmp_path / "x.symmtui-bundle.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    try:
        recording = Recording(read_bundle(path))
    except BundleError as exc:
        assert "damaged bundle" in str(exc)
        with _captured() as (_out, err):
            code = main(["replay", str(path)])
        lines = err.getvalue().splitlines()
        assert code == 2 and len(lines) == 1 and "damaged bundle" in lines[0], err.getvalue()
        return
    assert field == "topology" and recording.topology is None


@pytest.mark.parametrize("damage", ["node", "no-nodes", "int-node", "cause", "snapshot", "plain-state"])
def test_replay_of_a_hand_edited_board_is_one_line(recorded: dict[str, Any], tmp_path: Path, damage: str) -> None:
    """A recorded Board edited by hand (a node renamed, no nodes, a node that is a number, a cause or a snapshot
    that is text, a state as a plain word): `replay` refuses the bundle in one line before any screen (they
    raised StopIteration / AttributeError on the screen, or left the player thread dead at WAITING)."""
    from symmtui.bundle.format import BundleError, read_bundle
    from symmtui.bundle.replay import Recording

    doc = json.loads(json.dumps(recorded))
    board = doc["boards"][-1][2]
    node = board["nodes"][0]
    if damage == "node":
        board["node"] = "elsewhere"
    elif damage == "no-nodes":
        board["nodes"] = []
    elif damage == "int-node":
        board["nodes"] = [1]
    elif damage == "cause":
        node["cause"] = "boom"
    elif damage == "snapshot":
        node["snapshot"] = "x"
    else:
        board["state"] = "crashed"
    path = tmp_path / "x.symmtui-bundle.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    with pytest.raises(BundleError, match="damaged bundle"):
        Recording(read_bundle(path))
    with _captured() as (_out, err):
        code = main(["replay", str(path)])
    assert code == 2 and len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
