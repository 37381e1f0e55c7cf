"""A user's catalogue entries (the XDG file, a profile's [[rules.entry]]) meet the same checks as `--ready`: run by
RE2, in time linear in the line whatever their shape; what RE2 cannot run is refused before any line is read."""

from __future__ import annotations

from pathlib import Path

from symmtui.boundary import regex_problem
from symmtui.tables.catalogue import user_file
from tests.faults.hostile_kit import one_error_line, run_cli
from tests.launch.helpers import demo_config

SLOW = r"ERRX (\w+\s?)*$"
# The line that makes SLOW take exponential time under Python's re: a word run the trailing `$` can never accept.
FREEZER = "ERRX " + "ab " * 40 + "!\n"


def _entry(pattern: str) -> str:
    return f"[[entry]]\nid = \"our-errx\"\nkind = \"crash\"\npatterns = ['{pattern}']\n"


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "server.log"
    log.write_text("[2026-01-01 00:00:00] server starting\n" + FREEZER)
    return log


def test_a_pattern_that_backtracks_for_ever_in_re_runs_in_linear_time(tmp_path: Path) -> None:
    """``ERRX (\\w+\\s?)*$`` froze `wait` for good under Python's re on FREEZER (it was refused by a shape check
    later, which could be out-guessed); RE2 runs it in time linear in the line: the log is judged, CRASHED."""
    user_file().parent.mkdir(parents=True, exist_ok=True)
    user_file().write_text(_entry(SLOW))
    log = _log(tmp_path)
    with log.open("a") as fh:
        fh.write("ERRX the model share went away\n")  # SLOW matches this one
    r = run_cli("wait", "--log", str(log), "--timeout", "30", "--no-record", timeout=60)
    assert r.returncode == 1 and b"CRASHED" in r.stdout and b"ERRX the model share" in r.stdout, r.stderr[-500:]
    assert regex_problem(SLOW) is None
    user_file().unlink()
    ready_log = tmp_path / "ready.log"
    ready_log.write_text("[2026-01-01 00:00:00] server starting\n" + FREEZER + "ERRX serving now\n")
    ready = run_cli("wait", "--log", str(ready_log), "--ready", SLOW, "--timeout", "30", "--no-record", timeout=60)
    assert ready.returncode == 0 and b"READY" in ready.stdout, ready.stderr[-500:]


def test_what_re2_cannot_run_is_one_line_naming_the_entry(tmp_path: Path) -> None:
    """A look-around or a back-reference (they cannot run in linear time): one line, the file, the key, why."""
    user_file().parent.mkdir(parents=True, exist_ok=True)
    for pattern, says in ((r"ERRX (?=fatal)", "look-aheads are not supported"),
                          (r"ERRX (\w+) \1", "back-references are not supported")):
        user_file().write_text(_entry(pattern))
        line = one_error_line(run_cli("wait", "--log", str(_log(tmp_path)), "--timeout", "5", "--no-record",
                                      timeout=60))
        assert "patterns[0]" in line and str(user_file()) in line and says in line, line
        problem = regex_problem(pattern)
        assert problem is not None and says in problem  # --ready's own words
        assert says in one_error_line(run_cli("wait", "--log", str(_log(tmp_path)), "--ready", pattern, timeout=60))


def test_the_same_look_ahead_in_a_profiles_rules_entry_is_refused(tmp_path: Path) -> None:
    cfg = demo_config(tmp_path)
    cfg.write_text(cfg.read_text() + "\n[[rules.entry]]\n" + _entry(r"ERRX (?!ok)").split("\n", 1)[1])
    line = one_error_line(run_cli("launch", "--config", str(cfg), "--no-record", timeout=60))
    assert "rules.entry[0]" in line and "look-aheads are not supported" in line
    assert not (tmp_path / "logs").exists()


def test_a_safe_user_pattern_still_judges_the_line(tmp_path: Path) -> None:
    user_file().parent.mkdir(parents=True, exist_ok=True)
    user_file().write_text(_entry(r"ERRX [\w ]+!$"))
    r = run_cli("wait", "--log", str(_log(tmp_path)), "--timeout", "5", "--no-record", timeout=60)
    assert r.returncode == 1 and b"CRASHED" in r.stdout, (r.stdout[-500:], r.stderr[-500:])


def test_a_user_catalogue_is_capped_in_entries_patterns_and_pattern_length(tmp_path: Path) -> None:
    import pytest

    from symmtui.tables.catalogue import CatalogueError, load_file

    path = tmp_path / "catalogue.toml"
    cases = {
        "1001 entries; at most 1000": "".join(f'[[entry]]\nid = "e{i}"\nkind = "info"\npatterns = ["m{i}x"]\n'
                                              for i in range(1001)),
        "65 patterns; at most 64": _entry("p").replace("['p']", "[" + ", ".join(["'p'"] * 65) + "]"),
        "a pattern of 5000 characters (at most 4096": _entry("x" * 5000),
    }
    for says, text in cases.items():
        path.write_text(text)
        with pytest.raises(CatalogueError, match=says.replace("(", r"\(")):
            load_file(path)


# Ways around the old shape check found by a hostile run (each froze `scan` for 16 s to over 20 s on a 47-byte
# line, and `wait` for good, SIGTERM and --timeout included: Python's re cannot be interrupted). Under RE2 each
# is an ordinary pattern: the log is judged.
AROUND = [r"ERRX (\w|\w)*$", r"ERRX (\w+\s?){1,60}$", r"ERRX (a|a?)+$", r"ERRX \w*\w*\w*\w*\w*\w*\w*\w*\w*\w*$",
          r"ERRX (a|aa)*$", r"ERRX (a+){10}$", r"ERRX (?:a+){3}$", r"ERRX (?:\w+){8}$", r"ERRX (.*)(.*)(.*)(.*)(.*)(.*)!"]
STALL_LINE = "ERRX " + "a" * 40 + "!\n"


def test_the_ways_around_the_old_check_are_judged_in_linear_time(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-01-01 00:00:00] server starting\n" + STALL_LINE + "ERRX " + "a" * 12 + "\n")
    user_file().parent.mkdir(parents=True, exist_ok=True)
    for pattern in AROUND:
        assert regex_problem(pattern) is None, pattern
        user_file().write_text(_entry(pattern))
        r = run_cli("scan", str(log), timeout=30)
        assert r.returncode == 1 and b"CRASHED" in r.stdout, (pattern, r.stdout[-300:], r.stderr[-300:])
        user_file().unlink()
        r = run_cli("wait", "--log", str(log), "--crash", pattern, "--timeout", "30", "--no-record", timeout=60)
        assert r.returncode == 1 and b"CRASHED" in r.stdout, (pattern, r.stderr[-300:])


def test_patterns_that_match_any_line_are_refused() -> None:
    """faults.md: a regex that matches every line is refused; matching the empty string was the only case
    caught, and `\\S`, `\\b` or `(?=.)` as a crash pattern made every log CRASHED."""
    for pattern in (r"\S", r"\b", r"x?", r"(?:)|y", r"[\s\S]"):
        line = one_error_line(run_cli("scan", "--crash", pattern, str(Path(__file__)), timeout=30))
        assert "matches every line" in line, (pattern, line)
    line = one_error_line(run_cli("scan", "--crash", r"(?=.)", str(Path(__file__)), timeout=30))
    assert "look-aheads are not supported" in line, line  # RE2 refuses it before it could match anything
    for pattern in (r"KeyError: \d+", "e", " "):  # specific enough, if unwise: the user's choice
        r = run_cli("scan", "--crash", pattern, str(Path(__file__)), timeout=30)
        assert b"matches every line" not in r.stderr and r.returncode != 2, pattern


def _keyless_entry(pattern: str) -> str:
    return (f"[[entry]]\nid = \"our-stale\"\nkind = \"crash\"\nroles = [\"fatal\"]\npatterns = ['{pattern}']\n"
            "cause = \"the model share went away\"\naction = { type = \"investigate\", text = \"remount it\" }\n")


def test_a_user_pattern_without_a_literal_is_found_by_scan_and_wait_in_a_big_log(tmp_path: Path) -> None:
    """RE2 rules with no literal of three characters (one that ignores case; one anchored at the message's start,
    after an SGLang prefix) are found where the shipped ones are: scan's bulk prefilter over a 14 MB log (the
    line near its end, after the serving lines: a fatal entry), and the live engine."""
    filler = "".join(f"[2026-01-01 00:00:{i % 60:02d} TP{i % 8}] Decode batch. #running-req: {i % 9}, #token: {i}\n"
                     for i in range(200_000))
    user_file().parent.mkdir(parents=True, exist_ok=True)
    for pattern, line in ((r"(?i)STALE NFS", "[2026-01-01 00:01:00 TP3] OSError: stale nfs file handle\n"),
                          (r"^Sta\w+ NFS", "[2026-01-01 00:01:00 TP3] Stale NFS file handle\n")):
        user_file().write_text(_keyless_entry(pattern))
        log = tmp_path / "server.log"
        log.write_text("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/m', tp_size=8)\n" + filler + line
                       + filler[:2000])
        scan = run_cli("scan", str(log), timeout=120)
        assert scan.returncode == 1 and b"the model share went away" in scan.stdout, (pattern, scan.stdout[-800:])
        wait = run_cli("wait", "--log", str(log), "--timeout", "60", "--no-record", timeout=120)
        assert wait.returncode == 1 and b"the model share went away" in wait.stdout, (pattern, wait.stdout[-800:])
