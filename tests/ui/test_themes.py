"""Theme files: found, complete, legible in 256 colours; no colour hard-coded outside them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.color import Color as RichColor
from rich.color import ColorSystem
from textual.color import Color

from symmtui.cli import main
from symmtui.errors import UserError
from symmtui.ui.themes import DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes, parse_theme, theme_sources

UI = Path(__file__).resolve().parents[2] / "symmtui" / "ui"
REQUIRED = {"symmtui-dark", "symmtui-light", "symmtui-contrast"}


def test_themes_found_in_checkout_and_complete() -> None:
    themes = load_themes()
    assert REQUIRED <= set(themes)
    assert DEFAULT_THEME in themes
    assert any(str(s).endswith("themes") for s in theme_sources())
    for name in REQUIRED:
        theme = themes[name]
        missing = set(VARIABLE_DEFAULTS) - set(theme.variables)
        assert not missing, f"{name} lacks {sorted(missing)}"
        for value in theme.variables.values():
            Color.parse(value)  # every variable is a colour Textual understands


def test_user_theme_dir_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "cfg"
    (config / "symmtui" / "themes").mkdir(parents=True)
    (config / "symmtui" / "themes" / "mine.toml").write_text('name = "mine"\nprimary = "#112233"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    assert "mine" in load_themes()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('name = "x"\nprimary = ', "not valid TOML"),
        ('name = "x"\nprimary = "#fff"\ncolour = "#000"\n', "unknown key(s) 'colour'"),
        ('primary = "#fff"\n', "needs a name"),
        ('name = "x"\nprimary = "#fff"\n[variables]\nlog-crash = 3\n', "[variables]"),
        ('name = "x"\nprimary = "not-a-colour"\n', "failed to parse 'not-a-colour'"),
        ('name = "x"\nprimary = "#fff"\n[variables]\nlog-crash = "nope"\n', "failed to parse 'nope'"),
    ],
)
def test_bad_theme_file_is_one_clear_error(text: str, needle: str) -> None:
    with pytest.raises(UserError) as err:
        parse_theme(text, "bad.toml")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("theme file bad.toml: ") and needle in message


def test_unknown_theme_option_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--theme", "nope", "--log", "/nonexistent/x.log"]) == 2
    err = capsys.readouterr().err
    assert "unknown theme 'nope'" in err and "symmtui-contrast" in err


def _cube(value: str) -> tuple[int, int, int]:
    """What a 256-colour terminal (tmux) shows for this colour."""
    color = RichColor.parse(value).downgrade(ColorSystem.EIGHT_BIT)
    return color.get_truecolor()


def _contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    def lum(c: tuple[int, int, int]) -> float:
        def ch(v: int) -> float:
            s = v / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

        return 0.2126 * ch(c[0]) + 0.7152 * ch(c[1]) + 0.0722 * ch(c[2])

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_legible_in_256_colours(name: str) -> None:
    theme = load_themes()[name]
    assert theme.background is not None
    bg = _cube(theme.background)
    text_vars = [k for k in theme.variables if k.startswith(("log-", "state-", "diag-", "topo-")) or k == "muted"]
    for key in text_vars:
        ratio = _contrast(_cube(theme.variables[key]), bg)
        assert ratio >= 3.0, f"{name}: {key} {theme.variables[key]} on {theme.background}: contrast {ratio:.2f}"
    # the state colours stay distinct from one another after the downgrade (the verdict is by colour too)
    states = {k: _cube(theme.variables[k]) for k in ("state-starting", "state-ready", "state-crashed")}
    assert len(set(states.values())) == len(states), f"{name}: state colours merge in 256 colours"
    # the banner draws the background colour on each state colour
    for key in ("state-starting", "state-ready", "state-crashed", "state-stalled", "state-timed-out"):
        assert _contrast(bg, _cube(theme.variables[key])) >= 3.0, f"{name}: banner text on {key}"


_HEX = re.compile(r"#[0-9a-fA-F]{3,8}\b")
_NAMED = re.compile(r":\s*(?:[^;]*\s)?(?:red|green|blue|yellow|magenta|cyan|white|black|grey|gray)\b")


def test_no_hard_coded_colours_outside_themes() -> None:
    """Widgets, screens and app.tcss use theme variables only (themes.py holds the fallbacks)."""
    offenders: list[str] = []
    for path in sorted(UI.rglob("*.py")):
        if path.name == "themes.py":
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if _HEX.search(line):
                offenders.append(f"{path.relative_to(UI)}:{no}: {line.strip()}")
    for path in sorted(UI.rglob("*.tcss")):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if _HEX.search(line) or _NAMED.search(line):
                offenders.append(f"{path.relative_to(UI)}:{no}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
