"""A non-editable install ships the theme files and finds them through importlib.resources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_installed_wheel_ships_and_finds_themes(tmp_path: Path) -> None:
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = wheels.glob("symmtui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for theme in ("symmtui-dark", "symmtui-light", "symmtui-contrast"):
        assert f"symmtui/_themes/{theme}.toml" in names
    assert "symmtui/ui/app.tcss" in names
    assert {"symmtui/engines/any.toml", "symmtui/engines/sglang.toml", "symmtui/engines/ollama.toml"} <= set(names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    # Dependencies (textual...) come from this venv's site-packages; symmtui only from the new venv.
    env = dict(os.environ, PYTHONPATH=sysconfig.get_paths()["purelib"])
    probe = (
        "import json, symmtui; from symmtui.ui import themes; from symmtui.tables import enginetable; "
        "print(json.dumps({'file': symmtui.__file__, 'sources': [str(s) for s in themes.theme_sources()], "
        "'themes': sorted(themes.load_themes()), 'engines': list(enginetable.table().names())}))"
    )
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["file"].startswith(str(venv)), data
    assert any(s.startswith(str(venv)) and s.endswith("_themes") for s in data["sources"]), data
    assert {"symmtui-dark", "symmtui-light", "symmtui-contrast"} <= set(data["themes"])
    assert {"sglang", "vllm", "ollama"} <= set(data["engines"])  # the engine table ships and loads from the wheel
