"""Log text in `symmtui report` is quoted as code: a real `wait` on a log with hostile crash text, its
bundle reported, the Markdown rendered by a CommonMark renderer (markdown-it, HTML allowed as on GitHub);
and a bundle with wrong field types is one error line."""

from __future__ import annotations

import gzip
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from symmtui.bundle import store
from symmtui.bundle.format import SUFFIX
from tests.launch.helpers import run_cli

HOSTILE = ("<img src=x onerror=alert(1)> [click](http://evil.example/x) </details> ``` `tick` <script>alert(2)</script>"
           " @octocat see www.evil.example and http://evil.example/p.png")


class Tags(HTMLParser):
    """The element tags and links of rendered HTML, and the text inside <code>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.depth = 0
        self.code: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.hrefs += [v or "" for k, v in attrs if k in ("href", "src")]
        self.depth += tag == "code"

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        self.depth -= tag == "code"

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.code.append(data)


def _render(md: str) -> Tags:
    # GitHub's autolinks too (http://, www.): a bare URL in text becomes a link there, escaped or not
    html = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["table", "linkify"]).render(md)
    tags = Tags()
    tags.feed(html)
    return tags


def _hostile_bundle(tmp: Path) -> Path:
    log = tmp / "server.log"
    log.write_text("[2026-11-29 09:40:16] server_args=ServerArgs(model_path='m', tp_size=2)\n"
                   "[2026-11-29 09:40:17 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                   '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2714, in run\n'
                   "    scheduler = Scheduler(\n"
                   f"RuntimeError: {HOSTILE}\n"
                   f"</details> after the crash [more](http://evil.example/y) <img src=y onerror=alert(3)>\n")
    run = run_cli("wait", "--log", str(log), "--timeout", "30", "--stall", "0")
    assert run.returncode == 1, run.stdout + run.stderr  # CRASHED
    (bundle,) = store.store_dir().glob(f"*{SUFFIX}")  # the state dir's bundles/ (the test's own)
    return bundle


def test_hostile_log_text_is_code_in_the_report_title_verdict_cause_and_tail(tmp_path: Path) -> None:
    bundle = _hostile_bundle(tmp_path)
    rep = run_cli("report", str(bundle))
    assert rep.returncode == 0, rep.stderr
    md = rep.stdout
    assert md.startswith("## symmtui report: CRASHED: ")
    tags = _render(md)
    assert "img" not in tags.tags and "script" not in tags.tags and "a" not in tags.tags, tags.tags
    assert not any("evil.example" in h for h in tags.hrefs)
    # the report's own <details> is the only one, and it closes at the end, after the whole tail
    assert tags.tags.count("details") == 1 and tags.tags.count("/details") == 1
    assert tags.tags.index("/details") > max(i for i, t in enumerate(tags.tags) if t == "pre")
    code = "".join(tags.code)
    assert HOSTILE in code  # shown verbatim, as code: the title, the verdict line, the root cause, the tail
    assert code.count("<img src=x onerror=alert(1)>") >= 4
    assert "</details> after the crash" in code
    assert "@octocat" not in "".join(ln for ln in md.splitlines() if "`" not in ln)  # no mention outside code


@pytest.mark.parametrize(("path", "value", "named"), [
    (("verdicts", 0, "cause"), "KeyError: 12", "verdicts[0].cause is a string, not an object"),
    (("verdicts", 0), "crashed", "verdicts[0] is a string, not an object"),
    (("verdicts", 0, "cause", "line"), "five", "verdicts[0].cause.line is a string, not an integer"),
    (("verdicts", 0, "cause", "diagnosis"), ["x"], "verdicts[0].cause.diagnosis is a list, not an object"),
    (("verdicts", 0, "phases"), {"a": 1}, "verdicts[0].phases is an object, not a list"),
    (("log", "head", 0), "a line", "log line 1 is a string, not a list"),
    (("name",), 7, "name is an integer, not a string"),
])
def test_a_bundle_with_a_field_of_the_wrong_type_is_one_error_line(tmp_path: Path, path: tuple[object, ...],
                                                                    value: object, named: str) -> None:
    bundle = _hostile_bundle(tmp_path)
    data = json.loads(gzip.decompress(bundle.read_bytes()))
    node = data
    for key in path[:-1]:
        node = node[key]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    bundle.write_bytes(gzip.compress(json.dumps(data).encode()))
    rep = run_cli("report", str(bundle))
    assert rep.returncode == 2 and rep.stdout == ""
    assert rep.stderr.splitlines() == [rep.stderr.strip()], rep.stderr
    assert "damaged bundle" in rep.stderr and named in rep.stderr and "internal error" not in rep.stderr
