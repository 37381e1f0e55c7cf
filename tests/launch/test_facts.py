"""A launch's facts and the comparison of two launches: the command parsed (a reordered command is no
change), secrets kept as keyed hashes (the redactor's shapes), the model folder's files (real files), GPUs,
the order culprit first, and the history's bounds (a hostile command, corrupt and foreign lines)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from msgspec.structs import replace

from symmtui.judge.diagnose import Diagnosis
from symmtui.judge.rules import Action
from symmtui.launch import changes
from symmtui.launch.envinfo import GpuFact
from symmtui.launch.facts import MAX_VALUE, LaunchFacts, is_secret, of_command, parse
from symmtui.launch.history import MAX_LINE_BYTES, History, HistoryEntry

PY = ["/opt/venv/bin/python", "-m", "sglang.launch_server"]
HF = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmN"  # the Hugging Face token shape symmtui.redact masks


def _entry(n: int, facts: LaunchFacts | None, verdict: str = "ready", **kw: object) -> HistoryEntry:
    return HistoryEntry(launch_id=f"L{n}", command_hash="c", start=1000.0 * n, end=1000.0 * n + 60,
                        verdict=verdict, profile_key="p", facts=facts, **kw)  # type: ignore[arg-type]


def _facts(argv: list[str], env: dict[str, str] | None = None, cwd: str = "/srv") -> LaunchFacts:
    return of_command(argv, env or {}, cwd, host="gpu-7")


def test_a_reordered_but_equal_command_is_no_change() -> None:
    one = _facts([*PY, "--model-path", "/m", "--tp", "8", "--enable-torch-symm-mem", "--trust-remote-code"])
    two = _facts([*PY, "--trust-remote-code", "--tp=8", "--enable-torch-symm-mem", "--model-path=/m"])
    assert one == two
    assert changes.compare(_entry(2, two), _entry(1, one)) == []


def test_the_command_is_parsed_into_program_arguments_and_flags() -> None:
    command, flags = parse(["python3", "-X", "dev", "-m", "vllm.entrypoints.cli.main", "serve", "/models/q",
                            "--lora-modules", "a=/l/a", "--lora-modules", "b=/l/b", "--max-num-seqs", "-1",
                            "--enforce-eager", "--", "--not-a-flag"])
    assert command == ("python3", "-X", "dev", "-m", "vllm.entrypoints.cli.main", "serve", "/models/q", "--not-a-flag")
    assert flags == [("--lora-modules", "a=/l/a"), ("--lora-modules", "b=/l/b"), ("--max-num-seqs", "-1"),
                     ("--enforce-eager", None)]
    facts = _facts(["vllm", "serve", "/models/q", "--enforce-eager"])
    assert facts.model == "/models/q" and facts.command == ("vllm", "serve", "/models/q")
    # a shell profile's words are its text's
    assert parse(["/bin/sh", "-c", "exec python -m sglang.launch_server --tp 8"])[1] == [("--tp", "8")]


def test_flag_changes_are_worded_one_line_each() -> None:
    then = _facts([*PY, "--tp", "8", "--lora-modules", "a", "--mem-fraction-static", "0.88", "--old"])
    now = _facts([*PY, "--tp", "4", "--lora-modules", "a", "--lora-modules", "b", "--new", "--chunked", "4096",
                  "--mem-fraction-static", "0.88"])
    lines = [d.text for d in changes.compare(_entry(2, now), _entry(1, then))]
    assert lines == ["--chunked 4096 added", "--lora-modules a -> a, b", "--new added", "--old removed",
                     "--tp 8 -> 4"]


def test_a_secret_that_changed_is_changed_never_its_value(tmp_path: Path) -> None:
    url_then, url_now = "https://me:pass-one@hub.internal/x", "https://me:pass-two@hub.internal/x"
    then = _facts([*PY, "--api-key", "sk-" + "x" * 24], {"HF_TOKEN": HF, "SGLANG_HUB_URL": url_then,
                                                          "HF_HOME": "/data/hf", "NCCL_DEBUG": "INFO"})
    now = _facts([*PY, "--api-key=sk-" + "y" * 24], {"HF_TOKEN": HF[::-1], "SGLANG_HUB_URL": url_now,
                                                      "HF_HOME": "/data/hf", "NCCL_DEBUG": "INFO"})
    kept = json.dumps(then.to_json()) + json.dumps(now.to_json())
    for secret in (HF, HF[::-1], "pass-one", "pass-two", "x" * 24, "y" * 24):
        assert secret not in kept
    assert "/data/hf" in kept  # HF_HOME is no secret: its value is kept (a changed cache folder is news)
    assert is_secret(dict(now.env)["HF_TOKEN"]) and is_secret(dict(now.env)["SGLANG_HUB_URL"])
    lines = [d.text for d in changes.compare(_entry(2, now), _entry(1, then))]
    assert lines == ["--api-key changed", "HF_TOKEN changed", "SGLANG_HUB_URL changed"]
    # the same secret again is no change; set and unset say so without the value
    same = _facts([*PY, "--api-key", "sk-" + "x" * 24], {"HF_TOKEN": HF, "SGLANG_HUB_URL": url_then,
                                                         "HF_HOME": "/data/hf", "NCCL_DEBUG": "INFO"})
    assert changes.compare(_entry(2, same), _entry(1, then)) == []
    unset = _facts([*PY, "--api-key", "sk-" + "x" * 24], {"SGLANG_HUB_URL": url_then, "HF_HOME": "/data/hf",
                                                          "NCCL_DEBUG": "INFO"})
    assert [d.text for d in changes.compare(_entry(2, unset), _entry(1, then))] == ["HF_TOKEN unset"]
    assert [d.text for d in changes.compare(_entry(2, then), _entry(1, unset))] == ["HF_TOKEN set"]
    # the hash is keyed by this host's salt, kept user-only beside the history
    salt = History().path.parent / "secret.salt"
    assert salt.stat().st_mode & 0o777 == 0o600 and len(salt.read_bytes()) == 32


def test_the_model_folders_config_and_weight_index_are_compared(tmp_path: Path) -> None:
    model = tmp_path / "GLM-5-NVFP4"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["GlmMoeDsaForCausalLM"]}')
    (model / "model.safetensors.index.json").write_text('{"weight_map": {}}')
    argv = [*PY, "--model-path", str(model)]
    then = _facts(argv)
    assert [f[0] for f in then.files] == ["config.json", "model.safetensors.index.json"]
    before = (model / "config.json").stat().st_size
    (model / "config.json").write_text('{"architectures": ["GlmMoeDsaForCausalLM"], "rope_scaling": null}')
    os.utime(model / "config.json", (then.files[0][2] + 3600, then.files[0][2] + 3600))
    (model / "model.safetensors.index.json").unlink()
    lines = [d.text for d in changes.compare(_entry(2, _facts(argv)), _entry(1, then))]
    assert len(lines) == 2
    after = (model / "config.json").stat().st_size
    assert lines[0].startswith("model config.json changed (mtime ") and f"size {before} -> {after} bytes" in lines[0]
    assert lines[1] == "model model.safetensors.index.json is gone"
    # relative to the launch's directory; a hub id has no files
    assert _facts([*PY, "--model-path", "GLM-5-NVFP4"], cwd=str(tmp_path)).files[0][0] == "config.json"
    assert _facts([*PY, "--model-path", "zai-org/GLM-5"]).files == ()


def test_the_culprit_the_diagnosis_names_comes_first_then_versions_gpus_patch_model_rest() -> None:
    gpu = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    then = _facts([*PY, "--tp", "8"], {"NCCL_P2P_LEVEL": "NVL"})
    then = replace(then, gpus=tuple(GpuFact(i, gpu, "12.0", None, f"GPU-{i}") for i in range(8)))
    now = _facts([*PY, "--tp", "8", "--enable-torch-symm-mem"], {"NCCL_P2P_LEVEL": "SYS"}, cwd="/srv2")
    now = replace(now, gpus=tuple(GpuFact(i, gpu, "12.0", None, f"GPU-{i + (i > 5)}") for i in range(8)))
    diag = Diagnosis("SGLang lacks compute capability 12 in its torch symmetric-memory tables",
                     "press p to apply the SM120 patch (or `symmtui patch apply`), then relaunch; or drop "
                     "--enable-torch-symm-mem", fix=Action("patch", "…", patch="sm120"))
    hints = changes.hints_of([diag])
    assert hints == ("--enable-torch-symm-mem",)
    old = _entry(1, then, versions={"symmtui": "0.1.0", "sglang": "0.5.8", "torch": "2.8.0", "driver": "580.82"},
                 patch="no crash predicted")
    new = _entry(2, now, verdict="crashed", versions={"symmtui": "0.1.0", "sglang": "0.5.9", "torch": "2.8.0",
                                                      "driver": "580.95"}, patch="predicted keyerror")
    diffs = changes.compare(new, old, hints=hints)
    assert [d.text for d in diffs] == [
        "--enable-torch-symm-mem added",
        "sglang 0.5.8 -> 0.5.9", "driver 580.82 -> 580.95",
        "GPUs 6-7: another card (its UUID changed)",
        "SM120 patch check: no crash predicted -> predicted keyerror",
        "NCCL_P2P_LEVEL NVL -> SYS", "cwd /srv -> /srv2",
    ]
    said, _ = changes.since_ready(new, [old, new], hints=hints, at=old.start + 20 * 3600)
    assert said.since.startswith("since the last READY launch, ") and said.since.endswith(" (20 h ago)")
    assert said.lines == tuple(d.text for d in diffs)
    # back to what worked: only the culprit the diagnosis names, put back as it was
    assert changes.restore(diffs) == (Action("flag_remove", "remove --enable-torch-symm-mem (the READY launch ran "
                                             "without it)", flag="--enable-torch-symm-mem"),)
    # what one launch did not read (versions before the probe, no GPUs) is no change
    bare = _entry(3, _facts([*PY, "--tp", "8"], {"NCCL_P2P_LEVEL": "NVL"}, cwd="/srv"), versions={"symmtui": "0.1.0"})
    assert changes.compare(bare, old) == []


def test_the_first_launch_of_a_profile_has_nothing_to_compare_with() -> None:
    crashed = _entry(1, _facts(PY), verdict="crashed")
    other = HistoryEntry("L0", "c", 10.0, 20.0, "ready", profile_key="another", facts=_facts(PY))
    said, diffs = changes.since_ready(crashed, [other, crashed], hints=(), at=2000.0)
    assert said.since == "no READY launch of this profile to compare with" and said.lines == () and diffs == []
    later = _entry(2, _facts(PY))
    said, _ = changes.since_ready(_entry(3, _facts(PY), "crashed"), [crashed, later], hints=(), at=3100.0)
    assert said.since.startswith("nothing symmtui keeps differs from the last READY launch, ") and not said.lines


def test_the_history_stays_bounded_and_skips_corrupt_and_foreign_lines_with_a_count() -> None:
    # constructed hostile input: a command of 5000 long flags and 500 long variables
    argv = [*PY, *(w for i in range(5000) for w in (f"--flag-{i}-" + "x" * 300, "v" * 5000))]
    env = {f"NCCL_{i}_" + "Y" * 200: "z" * 10000 for i in range(500)}
    facts = _facts(argv, env, cwd="/" + "d" * 10000)
    hist = History()
    hist.append(_entry(1, facts))
    line = hist.path.read_bytes().splitlines()[-1]
    assert len(line) < MAX_LINE_BYTES, len(line)
    back = hist.entries()
    assert hist.skipped == 0 and back[0].facts == facts and facts.more > 5000
    assert all(len(v or "") <= MAX_VALUE for _n, v in facts.flags)
    # a line that is not JSON, a foreign JSON line, and one whose facts are damaged: each skipped and counted
    with hist.path.open("ab") as f:
        f.write(b"{not json\n")
        f.write(json.dumps({"event": "something else's"}).encode() + b"\n")
        damaged = _entry(2, facts).to_json()
        damaged["facts"]["flags"] = "--tp 8"
        f.write(json.dumps(damaged).encode() + b"\n")
    hist.append(_entry(3, _facts(PY)))
    assert [e.launch_id for e in hist.entries()] == ["L1", "L3"] and hist.skipped == 3
    # an older symmtui's line (no facts) still reads, and compares its versions only, saying so
    old = HistoryEntry("L0", "c", 1.0, 2.0, "ready", profile_key="p")
    assert HistoryEntry.from_json(json.loads(json.dumps(old.to_json()))) == old
    assert [d.text for d in changes.compare(_entry(4, _facts(PY), "crashed"), old)] == [
        "(the earlier launch kept no command or variables (an older symmtui): versions compared only)"]
