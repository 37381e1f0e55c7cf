"""Theme files: find them (source checkout, installed wheel, user config), parse and register them."""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Iterable, Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.color import Color, ColorParseError
from textual.theme import Theme

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.paths import config_dir

DEFAULT_THEME = "symmtui-dark"
MAX_THEME_BYTES = 256 << 10  # a theme file is a few hundred bytes

# App-specific theme variables and their fallbacks (dark default). Every colour the app draws
# comes from one of these or from Textual's own theme colours; theme files override them.
VARIABLE_DEFAULTS: dict[str, str] = {
    "log-crash": "#FF5F5F",
    "log-warning": "#FFD75F",
    "log-ready": "#5FD75F",
    "log-phase": "#5FAFFF",
    "log-progress": "#87AFD7",
    "log-info": "#BCBCBC",
    "log-traceback": "#FF8787",
    "log-dim": "#808080",
    "log-match": "#FFAF5F",
    "gpu-mem-used": "#5FAFFF",
    "gpu-mem-reserved": "#AF87FF",
    "gpu-mem-free": "#444444",
    "gpu-mem-high": "#FF875F",
    "gpu-spark": "#87D7FF",
    "gpu-ours": "#5FD75F",
    "gpu-stranger": "#FFAF5F",
    "gpu-lost": "#FF5F5F",
    "state-waiting": "#808080",
    "state-starting": "#5FAFFF",
    "state-ready": "#5FD75F",
    "state-crashed": "#FF5F5F",
    "state-stalled": "#FFD75F",
    "state-timed-out": "#FF875F",
    "state-stopped": "#808080",
    "gauge-bar": "#5FAFFF",
    "gauge-bar-empty": "#3A3A3A",
    "topo-nvlink": "#5FD75F",
    "topo-pcie": "#FFD75F",
    "topo-self": "#808080",
    "diag-cause": "#FF8787",
    "diag-action": "#5FD7FF",
    "muted": "#8A8A8A",
}

_THEME_KEYS = frozenset(
    {
        "name", "primary", "secondary", "warning", "error", "success", "accent", "foreground",
        "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha",
        "variables",
    }
)


def theme_sources() -> list[Traversable]:
    """Folders that may hold theme files, in load order (later ones override earlier names)."""
    sources: list[Traversable] = []
    try:
        packaged = resources.files("symmtui") / "_themes"
    except ModuleNotFoundError:  # pragma: no cover - symmtui is importable by definition
        packaged = None
    if packaged is not None and packaged.is_dir():
        sources.append(packaged)
    checkout = Path(__file__).resolve().parents[2] / "themes"
    if checkout.is_dir() and (checkout.parent / "pyproject.toml").is_file():
        sources.append(checkout)
    user = config_dir() / "themes"
    try:
        user_is_dir = stat.S_ISDIR(os.stat(user).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        user_is_dir = False
    except OSError as exc:
        raise UserError(f"cannot read the theme folder {user} ({exc.strerror}); fix its permissions or "
                        "set XDG_CONFIG_HOME to a readable directory") from None
    if user_is_dir:
        sources.append(user)
    return sources


def _theme_files(folder: Traversable) -> Iterator[Traversable]:
    try:
        files = sorted((f for f in folder.iterdir() if f.name.endswith(".toml")), key=lambda f: f.name)
    except OSError as exc:
        raise UserError(f"cannot list the theme folder {folder} ({exc.strerror}); fix its permissions "
                        "or move it away") from None
    yield from files


def _read_theme(file: Traversable) -> str:
    """A theme file's text, through the CLI boundary when it is a real file (FIFO, size, UTF-8)."""
    if isinstance(file, Path):
        return boundary.read_text(file, what="theme file", max_bytes=MAX_THEME_BYTES)
    try:
        return file.read_text(encoding="utf-8")  # a packaged theme (inside the wheel): ours
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the theme file {file} ({exc}); reinstall symmtui") from None


def known_variables() -> frozenset[str]:
    """Every theme variable a theme file may set: symmtui's own and the ones Textual derives."""
    global _KNOWN
    if _KNOWN is None:
        textual = Theme(name="probe", primary="#000000").to_color_system().generate()
        _KNOWN = frozenset(VARIABLE_DEFAULTS) | frozenset(textual)
    return _KNOWN


_KNOWN: frozenset[str] | None = None


def parse_theme(text: str, origin: str) -> Theme:
    """One theme file's text -> Theme; a bad file is a UserError naming the file and the problem."""
    try:
        data = boundary.parse_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"theme file {origin}: not valid TOML ({exc}); fix or remove it") from exc
    unknown = sorted(set(data) - _THEME_KEYS)
    if unknown:
        names = ", ".join(boundary.shown(k) for k in unknown[:5])
        raise UserError(f"theme file {origin}: unknown key(s) {names}; fix or remove it")
    if not isinstance(data.get("name"), str) or not data["name"]:
        raise UserError(f"theme file {origin}: needs a name = \"...\" line")
    if not isinstance(data.get("primary"), str):
        raise UserError(f"theme file {origin}: needs a primary = \"#RRGGBB\" colour")
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise UserError(f"theme file {origin}: [variables] must map names to colour strings")
    strange = sorted(set(variables) - known_variables())
    if strange:
        raise UserError(f"theme file {origin}: unknown variable {boundary.shown(strange[0])} in [variables] "
                        f"(symmtui's are {', '.join(list(VARIABLE_DEFAULTS)[:3])}, ...; see themes/README.md); "
                        "fix or remove it")
    try:
        theme = Theme(**data)
        theme.to_color_system()  # parses every colour
        for value in variables.values():
            Color.parse(value)
    except ColorParseError as exc:
        raise UserError(f"theme file {origin}: {exc}; use #RRGGBB colours") from exc
    except (TypeError, ValueError) as exc:
        raise UserError(f"theme file {origin}: {exc}") from exc
    return theme


def load_themes(sources: Iterable[Traversable] | None = None) -> dict[str, Theme]:
    """Every theme found, by name; later sources override earlier ones with the same name."""
    themes: dict[str, Theme] = {}
    for folder in theme_sources() if sources is None else sources:
        for file in _theme_files(folder):
            theme = parse_theme(_read_theme(file), str(file))
            themes[theme.name] = theme
    return themes


def register_themes(app: App[Any], themes: dict[str, Theme]) -> list[str]:
    """Register the themes with the app; return their names in a stable order (default first)."""
    for theme in themes.values():
        app.register_theme(theme)
    return sorted(themes, key=lambda n: (n != DEFAULT_THEME, n))
