"""Keeps README.md and docs/*.md true where they quote commands, options, links, tests and paths."""

from __future__ import annotations

import argparse
import ast
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from symmtui.cli import VERBS, build_parser
from symmtui.tables.catalogue import builtin_entries

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

# Options that the docs quote but that belong to programs outside this repository.
FOREIGN_OPTIONS = {
    "--enable-torch-symm-mem": "SGLang's server option",
    "--tp": "SGLang's server option",
    "--model-path": "SGLang's server option",
    "--port": "SGLang's server option",
    "--strict": "mypy's option",
    "--query-gpu": "nvidia-smi's option",
    "--cap-add": "docker's option",
    "--dist": "pytest-xdist's option",
    "--durations": "pytest's option",
    "--since": "docker logs' and kubectl logs' option (a log command's own)",
    "--timestamps": "docker logs' and kubectl logs' option (a log command's own)",
    "--tail": "docker logs' option (a log command's own)",
}
# The server options the catalogue's actions name (docs/catalogue.md lists them).
FOREIGN_OPTIONS.update({r.action.flag: "a server option a catalogue entry names"
                        for r in builtin_entries() if r.action is not None and r.action.flag})
ABSENT_OPTIONS = {"--insecure"}  # "There is no `--insecure`": must stay absent
# Paths the docs name that exist only in a built wheel, not in the repository.
WHEEL_ONLY_PATHS = {"symmtui/_themes"}


@dataclass(frozen=True)
class Command:
    """One `symmtui ...` invocation quoted in a page."""

    page: str
    line: int
    text: str


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _code_texts(path: Path) -> list[tuple[int, str]]:
    """Inline code spans, and the command lines of shell/console/untagged code blocks, with line numbers.

    Text captures (```text) and data blocks (toml, json) are not commands. A block line that
    continues a command (starts with whitespace after a line with `symmtui`) is joined to it; an
    inline span broken over two lines is read as one.
    """
    out: list[tuple[int, str]] = []
    prose: list[str] = []
    fence: str | None = None
    for no, line in enumerate(_read(path).splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip()
            prose.append("")
            continue
        prose.append(line if fence is None else "")
        if fence not in ("", "bash", "sh", "console"):
            continue
        if fence == "console":
            if not line.startswith("$ "):
                continue  # program output, not a command
            line = line[2:]
        if out and out[-1][0] == no - 1 and line[:1].isspace() and "symmtui" in out[-1][1]:
            out[-1] = (no, out[-1][1] + " " + line.strip())
        else:
            out.append((no, line))
    text = "\n".join(prose)
    for m in re.finditer(r"`([^`]+)`", text):
        out.append((text.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())))
    return sorted(out)


# `symmtui` as a program: at the start of a span or line, or after `&&`, `|` or `;` (a path prefix such
# as `.venv/bin/` is allowed); not `symmtui:` (an error line) nor `symmtui/...` or `symmtui.toml`.
_SYMMTUI = re.compile(r"(?:^|&&|\||;)\s*(?:[\w.$/-]*/)?symmtui(?![\w/.:-])")


def _commands(path: Path) -> list[Command]:
    found = []
    for no, text in _code_texts(path):
        text = text.split(" #", 1)[0]
        starts = [m.end() for m in _SYMMTUI.finditer(text)]
        for i, start in enumerate(starts):
            end = text.rfind("symmtui", 0, starts[i + 1]) if i + 1 < len(starts) else len(text)
            found.append(Command(_rel(path), no, text[start:end].strip()))
    return found


def _all_commands() -> list[Command]:
    return [c for page in PAGES for c in _commands(page)]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("symmtui's parser has no sub-commands")


PARSER = build_parser(every_verb=True)
SUB = _subparsers(PARSER)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def _option_tokens(text: str) -> list[str]:
    return re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text)


def _check_command(cmd: Command) -> list[str]:
    words = cmd.text.replace("[", " ").replace("]", " ").split()
    verb = words[0] if words and not words[0].startswith("-") else None
    if verb is not None and verb not in VERBS:
        return [f"{cmd.page}:{cmd.line}: `symmtui {cmd.text}`: no verb {verb!r} (verbs: {', '.join(VERBS)})"]
    parser = SUB[verb] if verb else PARSER
    problems = []
    # a quoted value is one argument (`--log-cmd 'kubectl logs -f --timestamps'`): its options are another program's
    for opt in _option_tokens(re.sub(r"'[^']*'", "''", cmd.text)):
        if opt not in _options(parser):
            problems.append(f"{cmd.page}:{cmd.line}: `symmtui {cmd.text}`: {verb or '(dashboard)'} has no {opt}")
    if verb == "patch" and len(words) > 1 and not words[1].startswith("-"):
        choices = next(a.choices for a in parser._actions if a.dest == "action")
        assert choices is not None
        for action in words[1].split("|"):
            if action not in choices:
                problems.append(f"{cmd.page}:{cmd.line}: `symmtui {cmd.text}`: no patch action {action!r}")
    return problems


def test_the_docs_quote_symmtui_commands() -> None:
    """The scanner below finds the commands it should (so the next test cannot pass on nothing)."""
    verbs_seen = {c.text.split()[0] for c in _all_commands() if c.text and not c.text.startswith("-")}
    assert {"wait", "scan", "gpus", "patch", "launch", "stop", "demo"} <= verbs_seen


def test_every_quoted_command_names_a_real_verb_and_options() -> None:
    problems = [p for cmd in _all_commands() for p in _check_command(cmd)]
    assert not problems, "\n".join(problems)


_PYTHON_M = re.compile(r"python3? -m ((?:symmtui|bench)(?:\.\w+)*)(?![\w.<])")


def _module_file(module: str) -> Path | None:
    base = ROOT / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__main__.py"):
        if candidate.is_file():
            return candidate
    return None


def _source_options(path: Path) -> set[str]:
    """The option strings a module's own argparse code declares (read, not run: benches run on --help)."""
    return set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", _read(path)))


def _quoted_modules() -> dict[str, tuple[str, int]]:
    """`python -m symmtui...` / `python -m bench...` modules the docs name, with where."""
    found: dict[str, tuple[str, int]] = {}
    for page in PAGES:
        for no, text in _code_texts(page):
            for module in _PYTHON_M.findall(text):
                found.setdefault(module, (_rel(page), no))
            for package in re.findall(r"python3? -m ((?:symmtui|bench)(?:\.\w+)*)\.<\w+>", text):
                for path in sorted((ROOT / package.replace(".", "/")).glob("[a-z]*.py")):
                    found.setdefault(f"{package}.{path.stem}", (_rel(page), no))
    return found


def test_every_quoted_python_module_exists() -> None:
    modules = _quoted_modules()
    assert {"symmtui.demo.server", "bench"} <= set(modules)
    missing = [f"{page}:{no}: python -m {m}" for m, (page, no) in modules.items() if _module_file(m) is None]
    assert not missing, "no such module:\n" + "\n".join(missing)


def test_every_quoted_option_exists_somewhere() -> None:
    """A bare `--option` must be an option of symmtui, of a module the docs run, or listed as foreign."""
    known = _options(PARSER).union(*(_options(p) for p in SUB.values()))
    for module in _quoted_modules():
        path = _module_file(module)
        if path is not None:
            known |= _source_options(path)
    problems = []
    for page in PAGES:
        for no, text in _code_texts(page):
            for opt in _option_tokens(text):
                if opt not in known and opt not in FOREIGN_OPTIONS and opt not in ABSENT_OPTIONS:
                    problems.append(f"{_rel(page)}:{no}: {opt} is not an option of symmtui")
    assert not problems, "\n".join(problems)
    assert not ABSENT_OPTIONS & known, "an option the docs call absent now exists: update docs/limits.md"


def test_every_option_of_every_verb_is_documented() -> None:
    """Each option the parser accepts appears in a quoted `symmtui VERB ...` line of that verb."""
    quoted: dict[str | None, set[str]] = {}
    for cmd in _all_commands():
        words = cmd.text.replace("[", " ").split()
        verb = words[0] if words and not words[0].startswith("-") else None
        quoted.setdefault(verb, set()).update(_option_tokens(cmd.text))
    missing = [
        f"symmtui {verb or '(dashboard)'} {opt}"
        for verb, parser in [(None, PARSER), *SUB.items()]
        for opt in sorted(_options(parser))
        if opt.startswith("--") and opt not in ("--help", "--version") and opt not in quoted.get(verb, set())
    ]
    assert not missing, "not in any quoted command line of README.md or docs/*.md:\n" + "\n".join(missing)


def test_the_checker_rejects_a_wrong_verb_and_a_wrong_option() -> None:
    assert _check_command(Command("x", 1, "wait --log PATH --timeout 5")) == []
    assert _check_command(Command("x", 1, "wiat --log PATH"))
    assert _check_command(Command("x", 1, "wait --kill-pid 5"))
    assert _check_command(Command("x", 1, "patch apply|undo --site DIR"))
    assert _check_command(Command("x", 1, "--no-such-dashboard-option"))


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """The #anchors GitHub makes for a page's headings."""
    anchors = set()
    fenced = False
    for line in _read(path).splitlines():
        fenced ^= line.strip().startswith("```")
        heading = None if fenced else re.match(r"#{1,6} (.*)", line)
        if heading:
            words = re.sub(r"[^\w\- ]", "", heading.group(1).lower())
            anchors.add(words.replace(" ", "-"))
    return anchors


def test_every_relative_link_points_to_a_file() -> None:
    problems = []
    links = 0
    for page in PAGES:
        for no, line in enumerate(_read(page).splitlines(), start=1):
            for target in _LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                links += 1
                file, _, anchor = target.partition("#")
                path = (page.parent / file).resolve() if file else page
                if not path.exists():
                    problems.append(f"{_rel(page)}:{no}: link to {target}: no such file")
                elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                    problems.append(f"{_rel(page)}:{no}: link to {target}: no such heading")
    assert links > 10
    assert not problems, "\n".join(problems)


def test_every_page_in_docs_is_linked_from_the_index() -> None:
    index = _read(ROOT / "docs" / "README.md")
    missing = [p.name for p in DOCS if p.name != "README.md" and f"]({p.name})" not in index]
    assert not missing, f"docs/README.md does not link {missing}"


_REPO_PATH = re.compile(r"^(?:tests|docs|bench|symmtui|themes|\.ci)/[\w./-]*[\w/]$")


def test_every_quoted_repository_path_exists() -> None:
    problems = []
    for page in PAGES:
        for no, text in _code_texts(page):
            word = text.split("::", 1)[0].strip()
            if _REPO_PATH.match(word) and word not in WHEEL_ONLY_PATHS and not (ROOT / word).exists():
                problems.append(f"{_rel(page)}:{no}: `{word}` does not exist")
    assert not problems, "\n".join(problems)


@functools.cache  # the fault table cites most test files many times: parse each once
def _test_names(path: Path) -> frozenset[str]:
    tree = ast.parse(_read(path))
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    )


def _fault_references() -> list[tuple[int, str, str | None]]:
    """(line, file under tests/, test name or None) for each test cited in the fault table."""
    refs: list[tuple[int, str, str | None]] = []
    for no, line in enumerate(_read(ROOT / "docs" / "faults.md").splitlines(), start=1):
        if not line.startswith("|"):
            continue
        cell = line.rstrip().rstrip("|").rsplit("|", 1)[-1]
        current: str | None = None
        for span in re.findall(r"`([^`]+)`", cell):
            if span.startswith("::"):
                assert current is not None, f"docs/faults.md:{no}: `{span}` with no file before it"
                refs.append((no, current, span[2:]))
            elif re.match(r"[\w/]+\.py(::\w+)?$", span):
                current, _, name = span.partition("::")
                refs.append((no, current, name or None))
    return refs


def test_every_test_in_the_fault_table_exists() -> None:
    refs = _fault_references()
    assert len(refs) > 100
    problems = []
    for no, file, name in refs:
        path = ROOT / "tests" / file
        if not path.is_file():
            problems.append(f"docs/faults.md:{no}: tests/{file} does not exist")
        elif name is not None and name not in _test_names(path):
            problems.append(f"docs/faults.md:{no}: tests/{file} has no {name}")
    assert not problems, "\n".join(problems)


def test_the_readme_is_short() -> None:
    lines = _read(README).splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines; move reference material into docs/"


def _readme_test_command() -> str:
    text = _read(README)
    section = text.split("\n## Run the tests\n", 1)[1]
    block = re.search(r"```bash\n(.*?)\n```", section, re.S)
    assert block is not None, "README.md: no ```bash block under 'Run the tests'"
    return block.group(1)


def test_the_readme_test_command_is_what_ci_runs() -> None:
    command = _readme_test_command()
    assert "\n" not in command
    ci_lines = [line.strip() for line in _read(ROOT / ".ci" / "run").splitlines()]
    assert command in ci_lines, f".ci/run does not run the README's test command:\n{command}"
    assert "pytest" in command and "'.[test]'" in command


@pytest.mark.parametrize("page", [p.name for p in DOCS])
def test_code_fences_are_closed(page: str) -> None:
    fences = [line for line in _read(ROOT / "docs" / page).splitlines() if line.strip().startswith("```")]
    assert len(fences) % 2 == 0, f"docs/{page}: an unclosed ``` block"


# ---- docs/performance.md: figures from a kept bench output; the bench names and options it quotes

PERFORMANCE = ROOT / "docs" / "performance.md"
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def _bench_sections() -> dict[str, str]:
    """bench module -> its printed output, from every docs/bench-*.txt kept."""
    sections: dict[str, str] = {}
    for path in sorted((ROOT / "docs").glob("bench-*.txt")):
        for name, body in re.findall(r"^=== (bench\.\w+) ===\n(.*?)(?=^=== |\Z)", _read(path), re.M | re.S):
            sections[name] = sections.get(name, "") + body
    return sections


def _printed_as(figure: str, output: str) -> bool:
    """Whether the bench printed this figure: the same number, or one rounded / in k or M units."""
    value = float(figure.replace(",", ""))
    places = len(figure.split(".")[1]) if "." in figure else 0
    printed = [float(n.replace(",", "")) for n in _NUMBER.findall(output)]
    return any(abs(round(p * scale, places) - value) < 1e-9 for p in printed for scale in (1, 1e-3, 1e-6))


def _performance_rows() -> list[tuple[int, list[str]]]:
    rows = []
    for no, line in enumerate(_read(PERFORMANCE).splitlines(), start=1):
        if line.startswith("| ") and not line.startswith("| figure"):
            rows.append((no, [c.strip() for c in line.strip().strip("|").split("|")]))
    return rows


def _figure_problems(rows: list[tuple[int, list[str]]], sections: dict[str, str]) -> list[str]:
    problems = []
    for no, (figure, _target, measured, baseline, command) in rows:
        if "**H200**" in figure:
            continue  # measured on a GPU host; its output is not kept here
        module = re.search(r"`(bench\.\w+)", command)
        if module is None or module.group(1) not in sections:
            problems.append(f"docs/performance.md:{no}: {command}: no output of it under docs/bench-*.txt")
            continue
        output = sections[module.group(1)]
        for cell in (measured, baseline):
            for number in _NUMBER.findall(cell):
                if not _printed_as(number, output):
                    problems.append(f"docs/performance.md:{no}: {number} ({cell}) is not in {module.group(1)}'s output")
    return problems


def test_every_figure_in_the_performance_table_is_in_the_kept_bench_output() -> None:
    rows = _performance_rows()
    assert len(rows) > 15
    problems = _figure_problems(rows, _bench_sections())
    assert not problems, "\n".join(problems)


def test_the_figure_check_catches_a_changed_figure() -> None:
    sections = _bench_sections()
    rows = _performance_rows()
    no, cells = next((no, c) for no, c in rows if "21.0 ms" in c[2])
    changed = [(no, [cells[0], cells[1], cells[2].replace("21.0 ms", "23.7 ms"), cells[3], cells[4]])]
    assert _figure_problems(changed, sections)
    assert not _figure_problems([(no, cells)], sections)


def _named_list(sentence_start: str) -> set[str]:
    text = " ".join(_read(PERFORMANCE).split())
    match = re.search(re.escape(sentence_start) + r"[^.]*?\(([^)]*)\)", text)
    assert match is not None, f"docs/performance.md no longer says {sentence_start!r}"
    return set(re.findall(r"`(\w+)`", match.group(1)))


def test_the_bench_list_is_what_python_m_bench_runs() -> None:
    import bench.__main__ as bench_main

    assert _named_list("`.venv/bin/python -m bench.<area>` runs one") == set(bench_main.ALL)


def test_the_quick_option_is_where_the_page_says() -> None:
    text = " ".join(_read(PERFORMANCE).split())
    match = re.search(r"`--quick` exists for ([^(]*)\(", text)
    assert match is not None
    said = set(re.findall(r"`(\w+)`", match.group(1)))
    has = {p.stem for p in (ROOT / "bench").glob("[a-z]*.py") if "--quick" in _source_options(p)}
    assert said == has


# ---- docs/dashboard.md: the keys table is the dashboard's bindings


def _documented_keys() -> set[str]:
    text = _read(ROOT / "docs" / "dashboard.md").split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    keys: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| key "):
            cell = line.strip("|").split("|", 1)[0]
            keys |= set(re.findall(r"`([^`]+)`", cell)) | ({"tab"} if "Tab" in cell else set())
    return keys


def _app_keys() -> set[str]:
    import textual.app
    import textual.binding

    import symmtui.ui.app as app_module

    apps = [
        v for v in vars(app_module).values()
        if isinstance(v, type) and issubclass(v, textual.app.App) and v.__module__ == app_module.__name__
    ]
    assert len(apps) == 1, f"expected one App in symmtui/ui/app.py, found {apps}"
    keys: set[str] = set()
    for binding in apps[0].BINDINGS:
        assert isinstance(binding, textual.binding.Binding)
        keys |= {binding.key_display} if binding.key_display else set(binding.key.split(","))
    return keys


def test_the_keys_table_lists_the_dashboards_keys() -> None:
    assert _documented_keys() == _app_keys()


# ---- docs/verbs.md: the JSON schemas are the keys the verbs really print


def _schema_block(after: str) -> str:
    text = _read(ROOT / "docs" / "verbs.md")
    assert after in text, f"docs/verbs.md no longer says {after!r}"
    block = re.search(r"```text\n(.*?)\n```", text.split(after, 1)[1], re.S)
    assert block is not None, f"docs/verbs.md: no ```text schema block after {after!r}"
    return block.group(1)


def _schema_keys(block: str) -> set[str]:
    """Keys of a schema written as `{ "a", "b": type, "c|d" + "_x"/"_y", "p"|"q": ... }`."""
    keys: set[str] = set()
    for stem, first, second in re.findall(r'"([\w|]+)" \+ "(_\w+)"/"(_\w+)"', block):
        keys |= {s + suffix for s in stem.split("|") for suffix in (first, second)}
    block = re.sub(r'"[\w|]+" \+ "_\w+"/"_\w+"', "", block)
    for alternatives in re.findall(r'(?:^|[{,\[])\s*("\w+"(?:\|"\w+")*)', block, re.M):
        keys |= set(re.findall(r'"(\w+)"', alternatives))
    return keys


def _json_keys(value: object, skip: frozenset[str]) -> set[str]:
    """Every dict key in a JSON value, not descending into the free-form dicts named in skip."""
    keys: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            keys.add(key)
            if key not in skip:
                keys |= _json_keys(inner, skip)
    elif isinstance(value, list):
        for inner in value:
            keys |= _json_keys(inner, skip)
    return keys


def test_the_schema_reader_reads_alternatives_and_suffixes() -> None:
    block = '{ "a", "b": x|null, "m": {"t|u" + "_bytes"/"_mib"}, "p": {"r"|"w": m}, "v": "ready"|"none" }'
    assert _schema_keys(block) == {"a", "b", "m", "t_bytes", "t_mib", "u_bytes", "u_mib", "p", "r", "w", "v"}


def test_scan_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    from symmtui.cli import main

    log = ROOT / "tests" / "fixtures" / "sglang-tp8-symm-mem-keyerror.log"
    assert main(["scan", str(log), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"] and doc["phases"] and doc["errors"][0]["diagnosis"]
    assert _json_keys(doc, frozenset()) == _schema_keys(_schema_block("`--json` prints one object"))


def test_gpus_json_has_the_documented_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from symmtui.cli import main
    from symmtui.gpu.standin import load_standin
    from symmtui.gpu.standin.record import record

    monkeypatch.delenv("SYMMTUI_NVML_STANDIN", raising=False)
    mod = load_standin("rtx-pro-6000-x8-pcie")
    mod.standin.set_load(0.5)  # so that the process list is not empty
    recording = tmp_path / "loaded.json"
    recording.write_text(json.dumps(record(mod, "loaded")))
    keys: set[str] = set()
    for standin in (str(recording), "h200-x2-nvswitch"):  # processes; NVLinks
        assert main(["gpus", "--json", "--debug", "--standin", standin]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["topology"] and doc["debug"]
        keys |= _json_keys(doc, frozenset({"na", "debug", "legend"}))
    assert {"pid", "remote_type"} <= keys  # both kinds of rows were there to compare
    assert keys == _schema_keys(_schema_block("`--json` prints schema `symmtui.gpus/1`"))


# ---- README.md: the `symmtui wait` example prints what the README shows


def _console_example(command: str) -> list[str]:
    """The output lines the README shows under `$ symmtui COMMAND` in a ```console block."""
    text = _read(README)
    start = text.index(f"$ symmtui {command}\n") + len(f"$ symmtui {command}\n")
    lines = []
    for line in text[start:].splitlines():
        if line.startswith(("$ ", "```")):
            break
        lines.append(line)
    return lines


def test_the_readme_wait_example_is_real_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import shutil

    from symmtui.cli import main

    command = "wait --log tests/fixtures/sglang-tp8-symm-mem-keyerror.log"
    shown = _console_example(command)
    assert len(shown) >= 4
    # a copy: `wait` records its bundle next to the log, which must not land in the source tree
    words = [w if not w.startswith("tests/") else shutil.copy(ROOT / w, tmp_path) for w in command.split()]
    code = main([str(w) for w in words])
    printed = capsys.readouterr().out.splitlines()
    assert code == 1
    # The README leaves the traceback block out: its lines must be the printed ones, in order.
    # Elapsed times ("[   0.0s]", "after 0.0 s") are this run's wall clock, so they are not compared.
    def clock(line: str) -> str:
        return re.sub(r"\[\s*\d+\.\ds\]|after \d+\.\d s", "<t>", line)

    rest = iter([clock(p) for p in printed])
    missing = [line for line in shown if not any(clock(line) == p for p in rest)]
    assert not missing, f"README.md's wait example is not what `symmtui {command}` prints: {missing}"
