"""Finding sglang / vllm without importing them: --site shapes, a launch's python, this interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from symmtui.patch import check
from symmtui.patch.finder import PackageNotFound, find, locate, read_version
from tests.patch.conftest import copy_layout

# A package that leaves a mark (and fails) if anything imports it.
TRAP = "import pathlib\npathlib.Path(__file__).with_name('IMPORTED').write_text('x')\nraise SystemExit('imported')\n"


def _trap_package(site: Path, name: str = "sglang") -> Path:
    pkg = site / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(TRAP)
    return pkg


def test_site_packages_dir(tmp_path: Path) -> None:
    site = copy_layout("sglang-0.5.8", tmp_path)
    inst = find("sglang", site=site)
    assert inst.root == (site / "sglang").resolve() and inst.version == "0.5.8"
    assert inst.found_by == f"--site {site}"


def test_venv_root_and_package_dir_itself(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    sp = venv / "lib" / "python3.11" / "site-packages"
    sp.parent.mkdir(parents=True)
    copy_layout("vllm-0.11", tmp_path).rename(sp)
    assert find("vllm", site=venv).root == (sp / "vllm").resolve()
    assert find("vllm", site=sp / "vllm").root == (sp / "vllm").resolve()
    assert check(venv, "vllm", "12.0").version == "0.11.0"


def test_source_tree_with_pyproject(tmp_path: Path) -> None:
    repo = tmp_path / "sglang-src"
    site = copy_layout("sglang-0.5.16", tmp_path)
    (repo / "python").mkdir(parents=True)
    (site / "sglang").rename(repo / "python" / "sglang")
    (repo / "python" / "pyproject.toml").write_text('[project]\nname = "sglang"\nversion = "0.5.99"\n')
    inst = find("sglang", site=repo)
    assert inst.root == (repo / "python" / "sglang").resolve() and inst.version == "0.5.99"


def test_version_files(tmp_path: Path) -> None:
    pkg = tmp_path / "sglang"
    pkg.mkdir()
    assert read_version("sglang", pkg) is None
    (pkg / "version.py").write_text('__version__ = "0.5.4"\n')
    assert read_version("sglang", pkg) == "0.5.4"
    (pkg / "_version.py").write_text("__version__ = version = '0.5.8'\n")
    assert read_version("sglang", pkg) == "0.5.8"
    dist = tmp_path / "sglang-0.5.9.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.9\n\nbody Version: 1\n")
    (tmp_path / "vllm-9.9.dist-info").mkdir()
    (tmp_path / "vllm-9.9.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 9.9\n")
    assert read_version("sglang", pkg) == "0.5.9"


def test_missing_site_and_missing_package(tmp_path: Path) -> None:
    with pytest.raises(PackageNotFound) as info:
        find("sglang", site=tmp_path / "nope")
    assert "is not a directory" in str(info.value)
    with pytest.raises(PackageNotFound) as info:
        find("sglang", site=tmp_path)
    assert "--site" in str(info.value) and info.value.exit_code == 2
    assert locate(["sglang", "vllm"], site=tmp_path) == []


def test_this_interpreter_finds_without_importing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _trap_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    inst = find("sglang")
    assert inst.root == pkg.resolve() and inst.found_by == "this interpreter's import path"
    assert not (pkg / "IMPORTED").exists()
    assert "sglang" not in sys.modules


def test_launch_python_finds_without_importing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _trap_package(tmp_path, "vllm")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    found = locate(["sglang", "vllm"], python=sys.executable)
    assert [(i.package, i.root) for i in found] == [("vllm", pkg.resolve())]
    assert found[0].found_by == f"python {sys.executable}"
    assert not (pkg / "IMPORTED").exists()


def test_launch_python_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(PackageNotFound) as info:
        find("sglang", python=str(tmp_path / "bin" / "python"))
    assert "does not exist" in str(info.value)


def test_launch_python_that_fails(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'broken interpreter' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(PackageNotFound) as info:
        find("sglang", python=str(fake))
    assert "broken interpreter" in str(info.value) and "--site" in str(info.value)


@pytest.mark.parametrize("content", [b"not a program\n", b"\x7fELF garbage"])
def test_launch_python_that_cannot_be_run(tmp_path: Path, content: bytes) -> None:
    """An executable that is not a program (exec format error) is a one-line refusal, not a traceback."""
    fake = tmp_path / "python"
    fake.write_bytes(content)
    fake.chmod(0o755)
    with pytest.raises(PackageNotFound) as info:
        find("sglang", python=str(fake))
    assert "could not run" in str(info.value) and "--site" in str(info.value)
    with pytest.raises(PackageNotFound) as info:
        find("sglang", python=str(tmp_path))
    assert "could not run" in str(info.value)
