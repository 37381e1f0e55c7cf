"""The layering of symmtui/, read from the code's own imports (every import: top-level, in a function, under
TYPE_CHECKING): each package imports only from itself and from the layers below it, never a sibling of its
own layer and never upwards, and no modules import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "symmtui"

LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer.split()) for layer in (
    "__init__ errors textsafe catalogue engines aside",  # the ground: no symmtui imports but these (catalogue, engines: data)
    "patterns",  # user regexes, run by RE2 (linear time)
    "redact",  # the one redactor (its ANSI rule is textsafe's)
    "paths clitext",  # state dirs; the command line's text conventions and writer
    "boundary proc",  # the CLI boundary (argparse types, file readers); /proc, process trees, ports
    "fsatomic",  # atomic writes; the state files read back through the boundary
    "tables",  # the engine table and the catalogue read from their TOML, their rule types, their cache
    "logs",  # reading a log: bytes to lines, a file followed or a command's output, records (by the engine table)
    "judge",  # judging it: rules, events, tracebacks, ranks, readiness, diagnosis, the verdict, the Board
    "bringup",  # running the watch: the Bringup threads, the HTTP probe (its GET: the exporter source uses it), scan
    "gpu patch",  # NVML and exporters; the SM120 patch
    "stacks launch",  # py-spy dumps; profiles, the supervisor, the history
    "demo",  # the simulated server and its profiles
    "session",  # the Session of 1..N nodes, its spec, mailbox, printer, metrics
    "bundle notify metrics",  # the plug-ins (and the replay), side by side above the Session they observe
    "build",  # the one builder: options -> spec -> Session with its plug-ins
    "ui",  # the dashboard (Textual)
    "verbs",  # the command line's verbs
    "cli __main__",  # the command line: it imports every verb module (their HELP lines and options)
))
SAME_LAYER = {("__main__", "cli")}  # `python -m symmtui` is the command line


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The symmtui modules ``path`` imports (``from symmtui.x import y``: ``symmtui.x.y`` when it is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "symmtui":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "symmtui"}
    return found


def _part(module: str) -> str:
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else "__init__"


def _layer(part: str) -> int:
    for i, layer in enumerate(LAYERS):
        if part in layer:
            return i
    raise AssertionError(f"symmtui/{part} is in no layer of tests/test_layers.py: add it where it belongs")


def upward(package: Path = PACKAGE) -> list[str]:
    """Every import of ``package`` that does not run down the layers, one line each."""
    modules = _modules(package)
    wrong = []
    for module, path in sorted(modules.items()):
        src = _part(module)
        for target in sorted(_imports(path, modules)):
            dst = _part(target)
            if src == dst or (src, dst) in SAME_LAYER:
                continue
            if _layer(dst) >= _layer(src):
                how = "a sibling of its layer" if _layer(dst) == _layer(src) else "a layer above it"
                wrong.append(f"{module} imports {target}: {how}")
    return wrong


def test_every_import_runs_down_the_layers() -> None:
    wrong = upward()
    assert not wrong, "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle() -> None:
    modules = _modules()
    edges = {m: {t for t in _imports(p, modules) if t in modules} for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    assert circles == [], circles


def test_the_check_sees_an_upward_import_a_sibling_and_a_lazy_one(tmp_path: Path) -> None:
    package = tmp_path / "symmtui"
    for name, text in {"bringup/engine.py": "def f():\n    from symmtui.ui import app\n",
                       "bringup/__init__.py": "", "ui/__init__.py": "", "ui/app.py": "from symmtui.bringup import engine\n",
                       "gpu/__init__.py": "", "gpu/x.py": "from symmtui.patch.y import z\n", "patch/__init__.py": "",
                       "patch/y.py": ""}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert upward(package) == ["symmtui.bringup.engine imports symmtui.ui.app: a layer above it",
                               "symmtui.gpu.x imports symmtui.patch.y: a sibling of its layer"]
