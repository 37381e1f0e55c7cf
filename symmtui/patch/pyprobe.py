"""Ask another interpreter where a package lives, in isolated mode: no code from cwd or PYTHONPATH runs.

``PY -c CODE`` puts the current directory first on the import path, so a ``json.py`` there would run
when CODE imports json. The probe therefore runs as ``PY -I -c CODE`` (no cwd, no PYTHONPATH, no user
site, no ``PYTHON*`` variables), imports only the standard library, and only then puts back the
directories the server itself would search (its script directory or cwd, its PYTHONPATH, its user
site) to *locate* the package with ``find_spec``, which reads directory listings and imports nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from msgspec import Struct, field

# Runs under -I: sys.path is the stdlib and the install's site-packages only. Every import happens
# before the server's directories are put on the path; after that nothing is imported, only located.
PROBE = (
    "import sys, os, json, site, importlib.util\n"
    "ctx = json.loads(sys.argv[1])\n"
    "user = []\n"
    "if ctx['user_site']:\n"
    "    venv_only = False\n"
    "    if sys.prefix != sys.base_prefix:\n"
    "        try:\n"
    "            with open(os.path.join(sys.prefix, 'pyvenv.cfg'), encoding='utf-8') as fh:\n"
    "                cfg = {k.strip().lower(): v.strip().lower()"
    " for k, s, v in (ln.partition('=') for ln in fh) if s}\n"
    "        except OSError:\n"
    "            cfg = {}\n"
    "        venv_only = cfg.get('include-system-site-packages', 'false') != 'true'\n"
    "    usp = site.getusersitepackages()\n"
    "    if not venv_only and os.path.isdir(usp):\n"
    "        user.append(usp)\n"
    "        for pth in sorted(n for n in os.listdir(usp) if n.endswith('.pth')):\n"
    "            try:\n"
    "                with open(os.path.join(usp, pth), encoding='utf-8') as fh:\n"
    "                    for ln in fh:\n"
    "                        ln = ln.rstrip()\n"
    "                        if ln and not ln.startswith(('#', 'import ', 'import\\t')):\n"
    "                            d = os.path.join(usp, ln)\n"
    "                            if os.path.isdir(d):\n"
    "                                user.append(d)\n"
    "            except (OSError, UnicodeDecodeError):\n"
    "                pass\n"
    "sites = set(site.getsitepackages())\n"
    "base = list(sys.path)\n"
    "cut = next((i for i, p in enumerate(base) if p in sites), len(base))\n"
    "path = []\n"
    "for p in list(ctx['head']) + base[:cut] + user + base[cut:]:\n"
    "    if p not in path:\n"
    "        path.append(p)\n"
    "sys.path[:] = path\n"
    "sys.path_importer_cache.clear()\n"
    "out = {}\n"
    "for name in ctx['packages']:\n"
    "    try:\n"
    "        spec = importlib.util.find_spec(name)\n"
    "    except (ImportError, ValueError):\n"
    "        spec = None\n"
    "    if spec is None:\n"
    "        continue\n"
    "    locs = list(spec.submodule_search_locations or [])\n"
    "    out[name] = {'origin': spec.origin, 'locations': locs}\n"
    "sys.stdout.write(json.dumps(out) + '\\n')\n"
)


class ImportContext(Struct, frozen=True):
    """The directories a server command searches before the interpreter's own: as ``sys.path`` would be.

    ``head``: its script directory (or cwd for ``-m``/``-c``), then its PYTHONPATH entries, in order;
    ``user_site``: whether it adds the user's site-packages.
    """

    head: tuple[str, ...] = field(default=())
    user_site: bool = True

    def argument(self, packages: Sequence[str]) -> str:
        """The one JSON argument the probe reads."""
        return json.dumps({"head": list(self.head), "user_site": self.user_site, "packages": list(packages)})


def command_words(argv: Sequence[str]) -> list[str]:
    """A command as words: a single string with spaces (a ``shell = true`` line) is split like a shell would."""
    words = list(argv)
    if len(words) == 1 and " " in words[0]:
        try:
            return shlex.split(words[0])
        except ValueError:
            return words
    return words


def _python_flags(words: Sequence[str]) -> tuple[set[str], int]:
    """Single-letter flags given to the python at ``words[0]`` and the index of the first non-flag word."""
    flags: set[str] = set()
    i = 1
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word in ("-", "--") or word.startswith("--"):
            break
        letters = word[1:]
        for j, ch in enumerate(letters):
            if ch in "cm":  # -c CODE / -m MOD end the options
                flags.add(ch)
                return flags, i
            if ch in "WX":  # take a value: the rest of the word, or the next word
                if j == len(letters) - 1:
                    i += 1
                break
            flags.add(ch)
        i += 1
    return flags, i


def _pythonpath(value: str, cwd: Path) -> list[str]:
    """PYTHONPATH as the interpreter reads it: empty entries are cwd, relative ones are under cwd."""
    out: list[str] = []
    for entry in value.split(os.pathsep):
        out.append(str(cwd / entry) if entry else str(cwd))
    return out


def context_for(
    argv: Sequence[str] | None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> ImportContext:
    """What a command (``argv``: python + args, or a console script) would search, run with ``env`` in ``cwd``.

    ``argv`` None: as ``PY -m ...`` run here (cwd first), the way ``patch --python`` is used.
    ``env`` is the whole environment the command runs with (ours plus a profile's).
    """
    environ = dict(os.environ) if env is None else dict(env)
    here = (cwd or Path.cwd()).absolute()
    words = command_words(argv or [])
    flags: set[str] = {"m"}
    script_dir: str | None = None
    if words:
        first = os.path.basename(words[0])
        if first.startswith("python"):
            flags, rest = _python_flags(words)
            if not flags & {"c", "m"} and rest < len(words) and words[rest] != "-":
                script_dir = os.path.dirname(os.path.realpath(here / words[rest]))
        else:  # a console script (``sglang serve``): sys.path[0] is the script's own directory
            flags = set()
            found = shutil.which(words[0], path=environ.get("PATH"))
            script_dir = os.path.dirname(os.path.realpath(found or (here / words[0])))
    isolated = "I" in flags
    ignore_env = isolated or "E" in flags
    safe_path = isolated or "P" in flags or (not ignore_env and bool(environ.get("PYTHONSAFEPATH")))
    head: list[str] = []
    if not safe_path:
        head.append(script_dir if script_dir is not None else str(here))
    if not ignore_env and environ.get("PYTHONPATH"):
        head.extend(_pythonpath(environ["PYTHONPATH"], here))
    user_site = not (isolated or "s" in flags or (not ignore_env and bool(environ.get("PYTHONNOUSERSITE"))))
    return ImportContext(tuple(head), user_site)
