"""The limits the second hostile re-test asked for: a counted repeat past RE2's own limit is refused (RE2 read
``a{2000000000}`` as literal text), a catalogue file of costly patterns is refused before it is compiled for
minutes, a stop does not wait for a follower inside one long match of a user's pattern, a serve token too long
for a browser's request line is refused, and a run of the dashboard leaves no job-control handler behind.

Constructed input (labelled so): the patterns, tokens and lines are made to be hostile, not taken from a log.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from symmtui.bringup.engine import Bringup
from symmtui.errors import UserError
from symmtui.judge.rules import RuleSet
from symmtui.patterns import MAX_REPEAT, PatternError, compile_user
from symmtui.tables import catalogue
from symmtui.tables.catalogue import parse_text
from symmtui.verbs import serve, serveauth
from tests.core.engine_kit import wait_until


@pytest.mark.parametrize("pattern", ["a{2000000000}", "x{1001}", r"\w{5,1001}", "(ab){1,100000}"])
def test_a_repeat_past_the_limit_is_refused_not_read_as_text(pattern: str) -> None:
    with pytest.raises(PatternError, match=f"a repeat counts at most {MAX_REPEAT}"):
        compile_user(pattern)


@pytest.mark.parametrize("pattern", ["x{1000}", r"\{2000\}", "a{3,}", "[{]9999}"])
def test_repeats_within_the_limit_and_braces_as_text_still_compile(pattern: str) -> None:
    assert compile_user(pattern).pattern == pattern


def _costly(n: int) -> str:
    return "".join(f"[[entry]]\nid = \"e{i}\"\nkind = \"crash\"\npatterns = ['''ERR{i} [\\w\\s]{{1000}}x''']\n"
                   for i in range(n))


def test_a_catalogue_file_of_costly_patterns_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.toml"
    path.write_text(_costly(400))
    with pytest.raises(UserError) as caught:
        catalogue.load_file(path)
    said = str(caught.value)
    assert "\n" not in said and str(path) in said and "use fewer or smaller repeats" in said
    path.write_text(_costly(20))  # a few of them are fine: the budget is the file's, not one pattern's
    assert len(catalogue.load_file(path)) == 20


def test_the_budget_is_per_file_not_per_process(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.toml"
    path.write_text(_costly(100))
    for _ in range(5):  # each load gets the whole budget again (the compile cache does not spend it twice)
        assert len(catalogue.load_file(path)) == 100


def test_a_stop_does_not_wait_for_a_follower_inside_a_long_match(tmp_path: Path) -> None:
    rules = parse_text("[[entry]]\nid = \"slow\"\nkind = \"crash\"\npatterns = ['''(?P<x>.*a){1000}z''']\n",
                       "hostile", user=True)
    log = tmp_path / "server.log"
    log.write_text("".join("z " + "a" * 65000 + "!\n" for _ in range(40)))  # 64 KiB lines, ~1 s each to refuse
    engine = Bringup(log, ruleset=RuleSet(rules))
    engine.start()
    follower = lambda: [t for t in threading.enumerate() if t.name == "symmtui-follow" and t.is_alive()]  # noqa: E731
    assert wait_until(lambda: bool(follower()))
    engine.stop()
    # stop returned and the follower is still in its lines: it did not wait for 40 such matches to end
    assert follower(), "the follower ended before stop returned: the log is too cheap to show anything"
    assert engine.snapshot().state.name == "STOPPED"


def test_a_serve_token_too_long_for_a_request_line_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(serveauth.TOKEN_ENV, "é" * 200)  # 200 characters, 1200 once percent-encoded
    with pytest.raises(UserError, match="give a shorter token") as caught:
        serve.resolve_token("127.0.0.1")
    assert "\n" not in str(caught.value)
    monkeypatch.setenv(serveauth.TOKEN_ENV, "k" * 1024)
    assert serve.resolve_token("127.0.0.1") == "k" * 1024


def test_a_run_of_the_dashboard_leaves_no_job_control_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.app import App

    from symmtui.ui.entry import run_app

    class Leaves(App[None]):
        """An app that, like Textual's terminal driver, installs SIGCONT/SIGTSTP handlers and returns."""

        def on_mount(self) -> None:
            signal.signal(signal.SIGCONT, lambda *_: None)
            signal.signal(signal.SIGTSTP, lambda *_: None)
            self.exit()

    run_app(Leaves(), headless=True)
    assert signal.getsignal(signal.SIGCONT) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGTSTP) is signal.SIG_DFL
