"""The command line's own words: unknown options and verbs named as typed, the help's examples and references
true, and headless verbs naming commands where the dashboard names keys."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import pytest

from symmtui.cli import build_parser, main
from symmtui.clitext import headless
from symmtui.tables.catalogue import builtin_entries

ROOT = Path(__file__).resolve().parent.parent
CRASH_LOG = ROOT / "tests" / "fixtures" / "sglang-tp8-symm-mem-keyerror.log"


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err  # one line
    return err


def test_an_unknown_option_names_itself_not_the_value_after_it(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "--lgo", "foo")
    assert "unknown option '--lgo'" in err and "did you mean --log?" in err
    assert "invalid choice" not in err and "foo" not in err
    assert err.endswith("see `symmtui --help`")


def test_a_near_miss_verb_gets_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert "unknown verb 'wiat' (did you mean wait?)" in _error(capsys, "wiat")
    far = _error(capsys, "frobnicate")
    assert "unknown verb 'frobnicate'" in far and "wait, scan" in far  # no near miss: the verbs listed


def test_a_verbs_unknown_option_points_to_the_verbs_help(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "wait", "--lgo", "x.log")
    assert "unknown option '--lgo' for `symmtui wait` (did you mean --log?)" in err
    assert err.endswith("see `symmtui wait --help`")
    assert _error(capsys, "gpus", "--jsn=1").endswith("see `symmtui gpus --help`")
    # an unknown option given before the verb is the dashboard's, and its help is the top one
    assert _error(capsys, "--lgo", "wait").endswith("see `symmtui --help`")


def test_help_ends_with_three_examples_that_parse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    tail = lines[lines.index("examples:") + 1 :]
    commands = [line.strip().split("  ")[0] for line in tail if line.startswith("  symmtui ")]
    assert len(commands) == 3
    assert all(line.startswith("  ") for line in tail)  # nothing after them
    for command in commands:  # each one is a command line symmtui accepts
        build_parser().parse_args(command.split()[1:])


def _helps(parser: argparse.ArgumentParser) -> list[str]:
    out = [parser.description or "", parser.epilog or ""]
    for action in parser._actions:
        out.append(action.help or "")
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _helps(sub)
    return out


def test_every_help_texts_reference_is_true() -> None:
    texts = _helps(build_parser(every_verb=True))
    refs = {ref for text in texts for ref in re.findall(r"\b(?:docs/)?[\w.-]+\.md\b", text)}
    assert "docs/verbs.md" in refs
    for ref in refs:
        assert (ROOT / ref).is_file(), f"a help text names {ref}, which does not exist"
    assert not [t for t in texts if "README" in t], "the README holds no reference a help text may point to"
    verbs_md = (ROOT / "docs" / "verbs.md").read_text()
    for schema in {s for text in texts for s in re.findall(r"symmtui\.\w+/\d+", text)}:
        assert schema in verbs_md, f"a help text names schema {schema}; docs/verbs.md does not"


def test_headless_verbs_name_the_command_not_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    shutil.copy(CRASH_LOG, log)
    assert main(["scan", str(log)]) == 1
    scan_text = capsys.readouterr().out
    assert main(["scan", "--json", str(log)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "symmtui.scan/1"
    assert main(["wait", "--timeout", "30", "--log", str(log)]) == 1  # recording its bundle (the state dir)
    wait_text = capsys.readouterr().out
    from symmtui.bundle import store

    bundle = store.newest()
    assert bundle is not None
    assert main(["report", str(bundle)]) == 0
    report_text = capsys.readouterr().out
    assert "- **Fix:** " in report_text
    for out in (scan_text, wait_text, json.dumps(doc), report_text):
        assert "press p" not in out
        assert "run `symmtui patch apply` to apply the SM120 patch, then relaunch" in out


def test_every_catalogue_key_has_a_headless_form() -> None:
    """Every action that names a dashboard key also names the command; its headless form keeps the rest."""
    for rule in builtin_entries():
        text = rule.action.text if rule.action is not None else ""
        if "press " in text:
            shown = headless(text)
            assert "press " not in shown and "`symmtui " in shown, (rule.id, shown)
    assert headless("relaunch with NCCL_P2P_DISABLE=1") == "relaunch with NCCL_P2P_DISABLE=1"


def test_scan_json_carries_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    log = tmp_path / "server.log"
    log.write_text("[2026-12-01 08:58:20] server_args=ServerArgs(model_path='x')\n")
    main(["scan", "--json", str(log)])
    assert json.loads(capsys.readouterr().out)["schema"] == "symmtui.scan/1"
