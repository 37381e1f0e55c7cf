"""The engine table (symmtui/engines/*.toml): every engine one data file, every field checked, and the code reading
only the table: prefixes, request lines, detection, warm-up, packages, the catalogue's engine names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from symmtui.judge.dialects import dialect
from symmtui.logs.lineparts import MASK, may_name_a_source, request_mask, split_prefix, split_records
from symmtui.tables import enginetable
from symmtui.tables.catalogue import CatalogueError, builtin_entries, parse_text
from symmtui.tables.enginetable import EngineTableError, first_chars, parse_file, table

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(enginetable.FOLDER.glob("*.toml"))
ENGINE_FILES = [f for f in FILES if f.stem != enginetable.SHARED]
# A command line of each engine's server, as its docs give it: the table must name the engine from it.
COMMANDS = {
    "sglang": "python3 -m sglang.launch_server --model-path /models/GLM-5 --tp 8 --port 30000",
    "vllm": "vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2",
    "tgi": "text-generation-launcher --model-id bigscience/bloom-560m --num-shard 2 --port 8080",
    "lmdeploy": "lmdeploy serve api_server internlm/internlm2_5-7b-chat --tp 2 --server-port 23333",
    "trtllm": "trtllm-serve TinyLlama/TinyLlama-1.1B-Chat-v1.0 --tp_size 2",
    "triton": "tritonserver --model-repository=/models --log-verbose=1",
    "llamacpp": "./llama-server -m models/7B/ggml-model.gguf -c 2048 --port 8080",
    "ollama": "ollama serve",
    "nim": "/opt/nim/start_server.sh",
    "rayserve": "serve run llm_app:app",
}


def test_every_engine_the_corpus_labels_has_its_data_file() -> None:
    """The engines the issue names (and the corpus labels use) are each one file of the table."""
    names = set(table().names())
    assert {"sglang", "vllm", "tgi", "lmdeploy", "trtllm", "triton", "llamacpp", "ollama", "nim", "rayserve"} <= names
    corpus = {tomllib.loads(p.read_text())["engine"] for p in (ROOT / "tests" / "corpus" / "cases").glob("*.toml")}
    assert corpus - {"torch"} <= names, corpus - {"torch"} - names  # "torch": a torchrun job, no server


def test_every_shipped_file_loads_checked_and_the_cache_gives_the_same() -> None:
    parsed = enginetable.build(enginetable.parse_all())
    assert parsed == table()
    assert table().names() == tuple(f.stem for f in ENGINE_FILES)


@pytest.mark.parametrize("path", ENGINE_FILES, ids=[f.stem for f in ENGINE_FILES])
@pytest.mark.parametrize("key", ["engine.name", "engine.title", "engine.package", "engine.programs", "engine.code",
                                 "engine.source", "engine.ready", "prefix", "request", "entry"])
def test_an_engine_file_missing_a_field_is_refused_naming_it(path: Path, key: str) -> None:
    data = tomllib.loads(path.read_text())
    table_key, _, field = key.partition(".")
    if field:
        del data[table_key][field]
    else:
        data.pop(table_key, None)
    with pytest.raises(EngineTableError, match=re.escape(f"{path.stem}.toml: {key}")):
        parse_file(path.stem, _dumps(data))


def test_every_engines_ready_markers_are_ready_entries_of_the_catalogue() -> None:
    ready = {r.id for r in builtin_entries() if r.kind.value == "ready"}
    for e in table().engines:
        assert e.ready and set(e.ready) <= ready, (e.name, set(e.ready) - ready)
    data = tomllib.loads((enginetable.FOLDER / "sglang.toml").read_text())
    data["engine"]["ready"] = []
    with pytest.raises(EngineTableError, match="needs the ids of the entries that say it is ready"):
        parse_file("sglang", _dumps(data))


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["prefix"][0].update(example="nothing like it"), "is not matched whole"),
    (lambda d: d["prefix"][0].update(pattern="(?P<zone>x)"), "unknown group 'zone'"),
    (lambda d: d["prefix"][0].update(layer="inner"), "is not one of outer, record, decor"),
    (lambda d: d["request"][0].update(example="GET / x"), "is not matched by the pattern"),
    (lambda d: d["engine"].update(source=["a thread"]), "owner/repo#N"),
    (lambda d: d["engine"].update(colour="red"), "engine.colour: unknown key"),
    (lambda d: d["engine"].update(name="other"), "must be 'sglang', the file's name"),
])
def test_a_bad_field_is_one_line_naming_it(change: object, problem: str) -> None:
    data = tomllib.loads((enginetable.FOLDER / "sglang.toml").read_text())
    change(data)  # type: ignore[operator]
    with pytest.raises(EngineTableError, match=re.escape(problem)):
        parse_file("sglang", _dumps(data))


@pytest.mark.parametrize("shape", table().prefixes, ids=lambda s: f"{s.engine}:{s.example.strip()[:30]}")
def test_every_prefix_example_is_read_as_a_prefix(shape: enginetable.PrefixShape) -> None:
    """The example is cut off whole, and a message after it is the body; a telling shape tells its engine."""
    if shape.layer == "decor":
        return  # colour codes: read anywhere, they say nothing
    line = shape.example + "Load weight begin."
    pre = split_prefix(line)
    assert pre.body.endswith("Load weight begin.") and len(pre.body) <= len("Load weight begin.") + 1, pre
    if shape.tells:
        assert pre.dialect == shape.engine
    if shape.layer == "record" and ({"tags", "rank", "pid"} & set(re.compile(shape.pattern).groupindex)):
        assert may_name_a_source(line)  # the rank board's cheap test lets it through


@pytest.mark.parametrize("shape", table().requests, ids=lambda s: f"{s.engine}:{s.example[:30]}")
def test_every_request_example_has_its_content_blanked(shape: enginetable.RequestShape) -> None:
    masked, found = request_mask(shape.example)
    assert found and MASK * 4 in masked and len(masked) == len(shape.example)


@pytest.mark.parametrize(("engine", "command"), COMMANDS.items())
def test_the_engine_is_told_from_its_command_line(engine: str, command: str) -> None:
    if table().engine(engine) is None:
        pytest.skip(f"{engine} has no engine file yet")
    assert table().by_command(command) == engine


def test_the_engine_is_told_from_a_stack_frame_and_nothing_else_is() -> None:
    assert table().by_path("/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py") == "sglang"
    assert table().by_path("/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py") == "vllm"
    assert table().by_path("/usr/lib/python3.12/json/decoder.py") is None
    assert table().by_command("python train.py --lr 1e-4") is None


def test_warm_up_and_front_processes_come_from_the_table() -> None:
    assert dialect("sglang").warmup_answer == "serving-request-ok"
    assert "sglang-prefill-batch" in dialect("sglang").warmup_entries
    assert dialect("vllm").warmup_answer is None and "APIServer" in dialect("vllm").front
    assert dialect("no-such-engine").name == "unknown"


def test_every_catalogue_entry_names_an_engine_of_the_table() -> None:
    names = set(enginetable.names())
    assert all(r.engine in names for r in builtin_entries()), {r.engine for r in builtin_entries()} - names
    assert all(r.unless_dialect in names for r in builtin_entries() if r.unless_dialect)
    bad = '[[entry]]\nid = "x1"\nkind = "warning"\nengine = "textgen"\npatterns = ["abc"]\n'
    with pytest.raises(CatalogueError, match="'textgen' is not one of any, "):
        parse_text(bad, "x.toml")


def test_an_engine_files_entries_are_its_engines_and_come_before_the_generic_ones() -> None:
    rules = builtin_entries()
    ids = [r.id for r in rules]
    assert next(r for r in rules if r.id == "sglang-ready").engine == "sglang"
    assert {r.engine for r in rules if r.id == "engine-core-init-failed"} == {"vllm", "trtllm", "rayserve"}
    assert ids.index("engine-core-init-failed") < ids.index("python-exception")  # its wrapper, not any RuntimeError
    generic = [i for i, r in enumerate(rules) if "generic" in r.roles]
    assert generic == list(range(len(rules) - len(generic), len(rules)))


def test_code_reads_only_the_table() -> None:
    """No module outside the table's loader names an engine: a new engine touches no code file (the patcher, its
    verb and the demo name the packages they patch or simulate)."""
    names = [n for n in table().names()]
    allowed = {"symmtui/patch", "symmtui/demo", "symmtui/verbs/patch.py", "symmtui/build.py"}
    found = []
    for path in sorted((ROOT / "symmtui").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if any(rel.startswith(a) for a in allowed):
            continue
        text = path.read_text()
        for n in names:
            if re.search(rf"""["']{n}["']""", text):
                found.append(f"{rel}: {n!r}")
    assert found == []


def test_first_characters_of_a_pattern() -> None:
    assert first_chars(r"\[rank(?P<rank>\d+)\]: ?") == frozenset("[")
    assert first_chars(r"(?:DEBUG|INFO) ") == frozenset("DI")
    assert first_chars(r" ?\[\d+m") == frozenset(" [")
    assert first_chars(r"\d{4}-") == frozenset("0123456789")
    assert first_chars(r"\w+ x") is None and first_chars(r"x?") is None


def test_a_joining_shapes_hint_is_what_its_match_needs() -> None:
    assert enginetable.join_hint(r"\[rank\d+\]: ") == ("[", frozenset("r"), "[rank")
    assert enginetable.join_hint(r"\(\w+ pid=\d+\) ") == ("(", None, " pid=")
    assert enginetable.join_hint(r"\w+ x") is None


def test_the_join_filter_never_drops_a_joined_record_of_the_corpus() -> None:
    """Every physical line of the tuned corpus and the device's joined-record logs: where a joining shape's prefix
    starts past the line's first character, the cheap filter lets the regex run."""
    from symmtui.logs import lineparts

    split_records("x")
    parser = lineparts._parser
    assert parser is not None and parser.joins is not None and parser.join_hints is not None
    lines = [ln for log in sorted((ROOT / "tests" / "corpus" / "cases").glob("*.log"))
             for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    joined = [ln for ln in lines if parser.joins.search(ln, 1)]
    assert len(lines) > 1000 and len(joined) >= 5
    assert all(lineparts._may_join(parser, ln) for ln in joined)
    assert sum(lineparts._may_join(parser, ln) for ln in lines) < len(lines) / 4  # and it spares the most


def test_records_joined_by_any_joining_shape_split_and_a_quoting_request_does_not() -> None:
    """Constructed: two vLLM workers' records on one line split; an SGLang request line that quotes a rank's record
    stays one record, its quote blanked."""
    line = "(Worker_TP0 pid=7) INFO 10-29 06:48:05 [a.py:1] ok(Worker_TP1 pid=8) INFO 10-29 06:48:05 [a.py:1] ok"
    assert [split_prefix(r).key for r in split_records(line)] == ["pid7", "pid8"]
    quoting = ("[2026-12-01 10:00:00] Receive: obj=GenerateReqInput(text='[2026-12-01 10:00:00 TP3] "
               "torch.OutOfMemoryError: CUDA out of memory')")
    (rec,) = split_records(quoting)
    assert "TP3" not in rec and "OutOfMemoryError" not in rec and len(rec) == len(quoting)


def _dumps(data: dict[str, object]) -> str:
    """TOML text of ``data`` (tables, arrays of tables, strings, lists of strings, booleans)."""
    out: list[str] = []

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return str(v)

    out.extend(f"{key} = []" for key, val in data.items() if val == [])  # before any table
    for key, val in data.items():
        if isinstance(val, dict):
            out.append(f"[{key}]")
            out.extend(f"{k} = {value(v)}" for k, v in val.items())
        elif isinstance(val, list):
            for item in val:
                out.append(f"[[{key}]]")
                out.extend(f"{k} = {value(v)}" for k, v in item.items())  # type: ignore[union-attr]
    return "\n".join(out) + "\n"
