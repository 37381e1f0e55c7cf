"""Terminal injection from logs: escape sequences and control bytes planted in a real log reach the
user's terminal from no verb and no dashboard pane; they are shown as text (``\\x1b]0;...``)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from symmtui import clitext
from symmtui.textsafe import is_safe, visible, visible_keep_sgr
from symmtui.ui.app import SymmApp
from symmtui.ui.widgets.diagnosis import DiagnosisView
from tests.faults.hostile_kit import run_cli
from tests.ui.kit import CRASH_LOG, FixedSession, fixed_gpus, read_lines, replay, settle, text

# What a hostile request text can make a server log: a title change, an OSC 52 clipboard write, a
# clear-screen, an 8-bit CSI and a bell.
TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
HOSTILE = f"{TITLE}{CLIPBOARD}{CLEAR}{C1_CSI}"
RAW = ("\x1b", "\x07", "\x9b")


def _planted_log(tmp_path: Path) -> Path:
    """The real KeyError: 12 crash log with hostile text planted in the first traceback (a frame's
    file name) and as a request line before it (servers log request text)."""
    lines = CRASH_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    first_tb = next(i for i, ln in enumerate(lines) if "Traceback" in ln)
    lines.insert(first_tb + 1, f'  File "/srv/{HOSTILE}.py", line 1, in <module>\n')
    lines.insert(first_tb, f"[2026-11-29 09:40:16 TP0] Receive: obj=GenerateReqInput(text='{HOSTILE}')\n")
    path = tmp_path / "server.log"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _no_raw(out: str) -> None:
    for ch in RAW:
        assert ch not in out, repr(out[max(0, out.find(ch) - 80) : out.find(ch) + 80])


def test_visible_shows_every_escape_and_keeps_sgr_only_where_asked() -> None:
    assert visible(TITLE) == "\\x1b]0;pwned\\x07"
    assert visible("a\tb") == "a\tb"  # tab is harmless
    assert visible("plain text ✓") == "plain text ✓"
    assert visible("x\u202eevil") == "x\\u202eevil"  # bidi override shown
    kept = visible_keep_sgr("\x1b[31mred\x1b[0m" + TITLE)
    assert kept.startswith("\x1b[31mred\x1b[0m") and kept.endswith("\\x1b]0;pwned\\x07")


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.text())
def test_visible_output_is_always_safe(s: str) -> None:
    out = visible(s)
    assert is_safe(out) and "\x1b" not in out
    assert is_safe(clitext.error_line(s))
    kept = visible_keep_sgr(s)
    assert "\x07" not in kept and "\x9b" not in kept


def test_wait_crash_block_shows_log_escapes_as_text(tmp_path: Path) -> None:
    log = _planted_log(tmp_path)
    r = run_cli("wait", "--log", str(log), "--timeout", "30", timeout=60)
    out = r.stdout.decode("utf-8")
    assert r.returncode == 1 and "CRASHED" in out, out
    _no_raw(out + r.stderr.decode())
    assert "\\x1b]0;pwned\\x07" in out  # the planted frame, shown in the first-error block


def test_wait_timed_out_last_lines_show_log_escapes_as_text(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"[2026-11-29 09:40:16 TP0] Receive: obj=GenerateReqInput(text='{HOSTILE}')\n")
    r = run_cli("wait", "--log", str(log), "--timeout", "1", timeout=60)
    out = r.stdout.decode("utf-8")
    assert r.returncode == 124 and "last lines:" in out, out
    _no_raw(out)
    assert "\\x1b]52;c;" in out


def test_scan_shows_log_escapes_as_text(tmp_path: Path) -> None:
    log = _planted_log(tmp_path)
    for args in ((), ("--json",)):
        r = run_cli("scan", str(log), *args, timeout=60)
        assert r.returncode == 1, r.stderr
        _no_raw(r.stdout.decode("utf-8") + r.stderr.decode())


def test_launch_prints_the_servers_log_escapes_as_text(tmp_path: Path) -> None:
    """A launched server whose log holds the planted crash: launch's own wait output is sanitised."""
    planted = _planted_log(tmp_path)
    profile = tmp_path / "symmtui.toml"
    profile.write_text(f'[server]\ncommand = ["/bin/sh", "-c", "cat {planted}; exit 1"]\n'
                       f'log_dir = "{tmp_path}/logs"\ntimeout = 30\n')
    r = run_cli("launch", "--config", str(profile), "--no-preflight",
                env={"XDG_STATE_HOME": str(tmp_path / "state")}, timeout=90)
    out = r.stdout.decode("utf-8") + r.stderr.decode("utf-8")
    assert r.returncode == 1 and "CRASHED" in out, out
    _no_raw(out)
    assert "\\x1b]0;pwned\\x07" in out


async def test_dashboard_renders_no_log_escape(tmp_path: Path) -> None:
    """Log pane, header, gauge and diagnosis of a crash whose log holds planted escapes: nothing raw
    reaches the screen; the pane shows the ANSI-free text with what is left (an 8-bit CSI) as text."""
    for log in (_planted_log(tmp_path), _short_log(tmp_path)):
        lines = read_lines(log)
        events, snap = replay(lines)
        gpus, topo = fixed_gpus(0.0)
        app = SymmApp(FixedSession(lines, events, snap, gpus, topo, log_path=log))
        async with app.run_test(size=(160, 60)) as pilot:
            await settle(pilot)
            screen = text(app)
            _no_raw(screen)
            _no_raw(str(app.query_one(DiagnosisView).render()))
            if log.name == "short.log":
                assert "GenerateReqInput(text='\\x9b31m')" in screen


def _short_log(tmp_path: Path) -> Path:
    path = tmp_path / "short.log"
    path.write_text(f"[2026-11-29 09:40:16 TP0] Receive: obj=GenerateReqInput(text='{HOSTILE}')\n", encoding="utf-8")
    return path
