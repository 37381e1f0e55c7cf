"""check / diff / apply / revert on the project's own layout fixtures."""

from __future__ import annotations

import ast
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from symmtui.patch import Capability, Refused, UnsupportedLayout, apply, check, diff, revert
from symmtui.patch.parser import table_values
from symmtui.patch.state import patches_dir
from tests.patch.conftest import FIXTURES, SGLANG_DIR, snapshot

Site = Callable[[str], Path]


@pytest.mark.parametrize(
    ("name", "layout", "outcome", "lookups"),
    [
        ("sglang-0.5.3", "sglang-symm-mem", "crash", ("subscript", "subscript")),
        ("sglang-0.5.8", "sglang-torch-symm-mem", "crash", ("subscript", "subscript")),
        ("sglang-0.5.16", "sglang-torch-symm-mem", "off", ("get", "get")),
        ("vllm-0.11", "vllm-symm-mem", "off", ("guarded", "subscript")),
    ],
)
def test_check_verdict_per_layout(layout_site: Site, name: str, layout: str, outcome: str, lookups: tuple[str, str]) -> None:
    pkg, cap, _files = FIXTURES[name]
    site = layout_site(name)
    report = check(site, pkg, cap)
    assert report.layout == layout
    assert report.version == name.split("-", 1)[1] + (".0" if pkg == "vllm" else "")
    assert report.state == "needed" and report.needs_patch and report.exit_code == 1
    assert report.outcome == outcome
    assert tuple(t.lookup for t in report.tables) == lookups
    assert [t.has_key for t in report.tables] == [False, False]
    assert all(t.has_donor for t in report.tables)
    if outcome == "crash":
        assert "KeyError: 12" in report.summary and "distributed init" in report.summary
    else:
        assert "silently" in report.summary


def test_check_reads_only(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    before = snapshot(site)
    check(site, "sglang", "12")
    diff(site, "sglang", "12")
    assert snapshot(site) == before
    assert not list(site.rglob("__pycache__"))


def test_diff_is_exact(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    text = diff(site, "sglang", 12)
    assert text.startswith(f"--- a/{SGLANG_DIR}/all_reduce_utils.py\n+++ b/{SGLANG_DIR}/all_reduce_utils.py\n")
    added = [line[1:] for line in text.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == [
        "    12: {",
        "        2: 64 * MiB,  # 64 MiB",
        "        4: 64 * MiB,  # 64 MiB",
        "        6: 128 * MiB,  # 128 MiB",
        "        8: 128 * MiB,  # 128 MiB",
        "    },",
        "        12: [6, 8],",
    ]
    assert not [line for line in text.splitlines() if line.startswith("-") and not line.startswith("---")]


def test_vllm_string_key_goes_after_the_last_lower_key(layout_site: Site) -> None:
    site = layout_site("vllm-0.11")
    text = diff(site, "vllm", "12.0")
    assert '+    "12.0": {\n+        2: 8 * MiB,  # 8 MiB\n' in text
    assert '         "10.3": [6, 8],\n+        "12.0": [6, 8],\n' in text


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_apply_check_revert_roundtrip(layout_site: Site, name: str) -> None:
    pkg, cap, files = FIXTURES[name]
    site = layout_site(name)
    before = snapshot(site)
    modes = {f: (site / f).stat().st_mode for f in files}
    result = apply(site, pkg, cap)
    assert result.status == "applied"
    assert sorted(str(p.relative_to(site)) for p in result.files) == sorted(files)
    key = Capability.parse(cap).key("str" if pkg == "vllm" else "int")
    donor = "10.0" if pkg == "vllm" else 10
    for f in files:
        data = (site / f).read_bytes()
        compile(data, f, "exec")
        assert (site / f).stat().st_mode == modes[f]
    sizes = table_values(ast.parse((site / files[0]).read_bytes()), result.report.tables[0].name)
    assert sizes is not None and sizes[key] == sizes[donor]
    after = check(site, pkg, cap)
    assert after.state == "applied" and after.outcome == "fine" and after.exit_code == 0
    assert after.applied_at is not None
    # no temp files, no .pyc next to the targets
    assert {p for p in snapshot(site)} == set(before)
    rv = revert(site, pkg)
    assert rv.status == "reverted"
    assert snapshot(site) == before
    assert check(site, pkg, cap).state == "needed"


def test_apply_is_idempotent(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    first = apply(site, "sglang", "12")
    patched = snapshot(site)
    second = apply(site, "sglang", "12")
    assert first.status == "applied"
    assert second.status == "already" and "already applied" in second.message
    assert snapshot(site) == patched


def test_manifest_records_originals(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.3")
    originals = snapshot(site)
    result = apply(site, "sglang", "12")
    assert result.record_dir is not None
    assert stat.S_IMODE(patches_dir().stat().st_mode) == 0o700
    manifest = json.loads((result.record_dir / "manifest.json").read_text())
    assert manifest["package"] == "sglang" and manifest["version"] == "0.5.3"
    assert manifest["capability"] == "12" and manifest["key"] == 12 and manifest["status"] == "applied"
    assert manifest["time"]
    assert len(manifest["files"]) == 2
    for entry in manifest["files"]:
        rel = str(Path(entry["path"]).relative_to(site))
        assert (result.record_dir / entry["backup"]).read_bytes() == originals[rel]
    history = (patches_dir() / "history.jsonl").read_text().splitlines()
    assert json.loads(history[-1])["op"] == "apply"


def test_upstream_fixed_release_needs_nothing(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    apply(site, "sglang", "12")
    # pretend this is a release that ships key 12: forget our record
    for record in patches_dir().glob("sglang-*"):
        for f in record.iterdir():
            f.unlink()
        record.rmdir()
    before = snapshot(site)
    report = check(site, "sglang", "12")
    assert report.state == "present" and report.exit_code == 0
    assert "already has capability 12" in report.summary
    result = apply(site, "sglang", "12")
    assert result.status == "nothing"
    assert snapshot(site) == before
    assert not list(patches_dir().glob("sglang-*"))
    assert revert(site, "sglang").status == "nothing"


def test_expected_report_refuses_when_files_changed(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    report = check(site, "sglang", "12")
    target = site / FIXTURES["sglang-0.5.8"][2][1]
    target.write_bytes(target.read_bytes() + b"# edited after check\n")
    before = snapshot(site)
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12", expected=report)
    assert info.value.reason == "changed" and info.value.exit_code == 3
    assert snapshot(site) == before
    assert not list(patches_dir().glob("sglang-*"))


def test_unknown_layout_is_a_refusal(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    utils = site / FIXTURES["sglang-0.5.8"][2][0]
    utils.write_text("MiB = 1 << 20\nTORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES = dict(load_sizes())\n")
    before = snapshot(site)
    with pytest.raises(UnsupportedLayout) as info:
        check(site, "sglang", "12")
    assert info.value.exit_code == 2
    assert "not a dict literal" in str(info.value)
    with pytest.raises(UnsupportedLayout):
        apply(site, "sglang", "12")
    assert snapshot(site) == before


def test_no_tables_at_all_is_unknown(tmp_path: Path) -> None:
    pkg = tmp_path / "sglang"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    with pytest.raises(UnsupportedLayout) as info:
        check(tmp_path, "sglang", "12")
    assert "all_reduce_utils.py" in str(info.value)


def test_donor_missing_refuses(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    mm = site / FIXTURES["sglang-0.5.8"][2][1]
    mm.write_text(mm.read_text().replace("        10: [6, 8],\n", ""))
    before = snapshot(site)
    report = check(site, "sglang", "12")
    assert report.state == "donor-missing" and report.exit_code == 3
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "donor-missing" and "lack key 10" in str(info.value)
    assert snapshot(site) == before


def test_one_table_hand_edited_refuses_and_shows_it(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    mm = site / FIXTURES["sglang-0.5.8"][2][1]
    mm.write_text(mm.read_text().replace("        10: [6, 8],\n", "        10: [6, 8],\n        12: [8],\n"))
    before = snapshot(site)
    report = check(site, "sglang", "12")
    assert report.state == "mismatch" and report.outcome == "crash"
    with pytest.raises(Refused) as info:
        apply(site, "sglang", "12")
    assert info.value.reason == "mismatch"
    detail = info.value.detail
    assert "_WORLD_SIZES_MULTIMEM has key 12" in detail and "12: [8]" in detail
    assert "TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES lacks key 12" in detail
    assert snapshot(site) == before


def test_revert_refuses_after_upgrade_then_force_restores(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    original = snapshot(site)
    apply(site, "sglang", "12")
    utils = site / FIXTURES["sglang-0.5.8"][2][0]
    utils.write_bytes(utils.read_bytes().replace(b"# 64 MiB", b"# upgraded"))
    upgraded = snapshot(site)
    with pytest.raises(Refused) as info:
        revert(site, "sglang")
    assert info.value.reason == "hash-mismatch" and "--force" in str(info.value)
    assert snapshot(site) == upgraded
    assert revert(site, "sglang", force=True).status == "reverted"
    assert snapshot(site) == original


def test_revert_twice_and_without_record(layout_site: Site) -> None:
    site = layout_site("vllm-0.11")
    apply(site, "vllm", "12.0")
    assert revert(site, "vllm").status == "reverted"
    second = revert(site, "vllm")
    assert second.status == "nothing" and "nothing to revert" in second.message


def test_revert_after_hand_revert_says_already(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.16")
    original = snapshot(site)
    result = apply(site, "sglang", "12")
    for f in result.files:
        f.write_bytes(original[str(f.relative_to(site))])
    assert revert(site, "sglang").status == "already"


def test_mode_is_preserved(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    files = [site / f for f in FIXTURES["sglang-0.5.8"][2]]
    for f in files:
        os.chmod(f, 0o640)
    apply(site, "sglang", "12")
    assert [stat.S_IMODE(f.stat().st_mode) for f in files] == [0o640, 0o640]
    revert(site, "sglang")
    assert [stat.S_IMODE(f.stat().st_mode) for f in files] == [0o640, 0o640]


def test_pcie_caveat(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    pcie = check(site, "sglang", "12", nvlink=False)
    assert any("PCIe only" in c and "removes the crash" in c for c in pcie.caveats)
    nvl = check(site, "sglang", "12", nvlink=True)
    assert not any("PCIe" in c for c in nvl.caveats)
    unknown = check(site, "sglang", "12", nvlink=None)
    assert any("may stay off" in c for c in unknown.caveats)


def test_vllm_minor_assumption_is_stated(layout_site: Site) -> None:
    site = layout_site("vllm-0.11")
    assert any('assumed "12.0"' in c for c in check(site, "vllm", "12").caveats)
    assert check(site, "vllm", "12.1").key == "12.1"


def test_report_json_is_serialisable(layout_site: Site) -> None:
    site = layout_site("vllm-0.11")
    data = json.loads(json.dumps(check(site, "vllm", "12.0").to_json()))
    assert data["key"] == "12.0" and data["donor"] == "10.0" and data["state"] == "needed"
    assert [t["name"] for t in data["tables"]] == ["SYMM_MEM_ALL_REDUCE_MAX_SIZES", "_WORLD_SIZES_MULTIMEM"]


def test_pre_hopper_gpu_is_not_applicable(layout_site: Site) -> None:
    site = layout_site("sglang-0.5.8")
    before = snapshot(site)
    report = check(site, "sglang", "8.9")
    assert report.state == "not-applicable" and report.exit_code == 0 and report.outcome == "off"
    assert "capability 9 or newer" in report.summary
    assert apply(site, "sglang", "8.9").status == "nothing"
    assert diff(site, "sglang", "8.9") == ""
    assert snapshot(site) == before


def test_hopper_and_datacenter_blackwell_are_present(layout_site: Site) -> None:
    site = layout_site("vllm-0.11")
    for cap in ("9.0", "10.0", "10.3"):
        report = check(site, "vllm", cap)
        assert report.state == "present" and report.outcome == "fine" and report.exit_code == 0


def test_second_capability_on_top_refuses_to_keep_revert_exact(layout_site: Site) -> None:
    site = layout_site("vllm-0.11")
    original = snapshot(site)
    apply(site, "vllm", "12.1")
    patched = snapshot(site)
    with pytest.raises(Refused) as info:
        apply(site, "vllm", "12.0")
    assert info.value.reason == "other-capability" and "revert it first" in str(info.value)
    assert snapshot(site) == patched
    revert(site, "vllm")
    assert snapshot(site) == original
    assert apply(site, "vllm", "12.0").status == "applied"
