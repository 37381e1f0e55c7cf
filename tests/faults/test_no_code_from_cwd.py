"""Asking an interpreter where sglang lives runs no code from cwd, the profile's cwd, PYTHONPATH or user site."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from symmtui.patch.finder import locate
from symmtui.patch.preflight import preflight
from tests.launch.helpers import write_profile
from tests.patch.conftest import copy_layout

# Modules the old probe (``PY -c "import importlib.util, json, sys ..."``) or the interpreter's startup
# would pick up from the first directory on its path; each one leaves a marker if it ever runs.
SHADOWS = ("json", "importlib", "os", "re", "site", "sitecustomize", "usercustomize", "encodings", "abc", "sys")


def _marker_code(markers: Path, name: str) -> str:
    return f"open({str(markers / name)!r}, 'w').close()\n"


def plant(where: Path, markers: Path) -> None:
    """Hostile modules named like the standard library, and a trap ``sglang`` holding real tables."""
    where.mkdir(parents=True, exist_ok=True)
    for name in SHADOWS:
        if name in ("importlib", "encodings"):
            (where / name).mkdir()
            (where / name / "__init__.py").write_text(_marker_code(markers, f"{name}-{where.name}"))
        else:
            (where / f"{name}.py").write_text(_marker_code(markers, f"{name}-{where.name}"))
    tables = copy_layout("sglang-0.5.8", where / "_layout")
    (tables / "sglang").rename(where / "sglang")
    (where / "sglang" / "__init__.py").write_text(_marker_code(markers, f"sglang-{where.name}"))


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # -P: symmtui itself must not pick the planted modules up either (its console script never would)
    return subprocess.run([sys.executable, "-P", "-m", "symmtui", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env or dict(os.environ))


def test_patch_python_from_a_hostile_cwd(tmp_path: Path, markers: Path) -> None:
    """``patch check --python PY`` run in a directory holding json.py & co.: found by name, nothing runs."""
    work = tmp_path / "work"
    plant(work, markers)
    res = _cli("patch", "check", "--python", sys.executable, "--package", "sglang", "--capability", "12", "--json",
               cwd=work)
    assert sorted(p.name for p in markers.iterdir()) == []
    doc = json.loads(res.stdout)
    # the server (python -m sglang... run here) would import the sglang in cwd: that is the one checked
    assert doc["results"][0]["root"] == str((work / "sglang").resolve()), res.stderr
    assert doc["results"][0]["state"] == "needed" and res.returncode == 1


def test_launch_preflight_in_a_hostile_profile_cwd(tmp_path: Path, markers: Path) -> None:
    """The preflight and ``patch --profile`` probe in the profile's cwd: found there, nothing runs."""
    prof_cwd = tmp_path / "server"
    plant(prof_cwd, markers)
    argv = [sys.executable, "-m", "sglang.launch_server", "--tp-size", "2", "--enable-torch-symm-mem"]
    pred = preflight(argv, 12, cwd=prof_cwd, env={})
    assert pred is not None and pred.will_crash and pred.report.root == (prof_cwd / "sglang").resolve()
    profile = write_profile(tmp_path, command=argv, cwd=prof_cwd, log_dir=tmp_path / "logs")
    elsewhere = tmp_path / "elsewhere"
    plant(elsewhere, markers)
    res = _cli("patch", "check", "--profile", str(profile), "--capability", "12", "--json", cwd=elsewhere)
    assert json.loads(res.stdout)["results"][0]["root"] == str((prof_cwd / "sglang").resolve()), res.stderr
    assert sorted(p.name for p in markers.iterdir()) == []


def test_pythonpath_is_searched_not_run(tmp_path: Path, markers: Path) -> None:
    """The profile's PYTHONPATH decides where sglang is found (as for the server), but nothing in it runs."""
    lib = tmp_path / "lib"
    plant(lib, markers)
    found = locate(["sglang"], python=sys.executable, env={"PYTHONPATH": f"{tmp_path / 'nowhere'}:{lib}"},
                   cwd=tmp_path)
    assert [(i.package, i.root) for i in found] == [("sglang", (lib / "sglang").resolve())]
    assert sorted(p.name for p in markers.iterdir()) == []


def test_a_console_script_searches_its_own_directory_not_cwd(tmp_path: Path, markers: Path) -> None:
    """``sglang serve``: sys.path[0] is the script's directory, so a sglang in cwd is not the server's."""
    work = tmp_path / "work"
    plant(work, markers)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "sglang"
    script.write_text(f"#!{sys.executable}\nraise SystemExit('the server script must not run')\n")
    script.chmod(0o755)
    found = locate(["sglang"], python=sys.executable, env={"PATH": f"{bindir}:{os.environ.get('PATH', '')}"},
                   cwd=work, argv=["sglang", "serve", "--tp", "2"])
    assert found == []  # not on the script's path; the one in cwd is not what the server imports
    assert sorted(p.name for p in markers.iterdir()) == []


def test_user_site_pth_lines_are_read_not_run(tmp_path: Path, markers: Path) -> None:
    """A user site's .pth path lines are followed (the server would), its ``import`` lines never run."""
    base = getattr(sys, "_base_executable", sys.executable)  # not a venv's python: it has a user site
    userbase = tmp_path / "userbase"
    probe = subprocess.run([base, "-I", "-c", "import site, sys; print(site.getusersitepackages())"],
                           capture_output=True, text=True, timeout=30, check=True,
                           env={**os.environ, "PYTHONUSERBASE": str(userbase)})
    usp = Path(probe.stdout.strip())
    usp.mkdir(parents=True)
    extra = tmp_path / "src"
    plant(extra, markers)
    (usp / "dev.pth").write_text(f"import os; open({str(markers / 'pth-import')!r}, 'w').close()\n{extra}\n")
    (usp / "usercustomize.py").write_text(_marker_code(markers, "usercustomize-usersite"))
    found = locate(["sglang"], python=base, env={"PYTHONUSERBASE": str(userbase)}, cwd=tmp_path)
    assert [i.root for i in found] == [(extra / "sglang").resolve()]
    assert sorted(p.name for p in markers.iterdir()) == []
