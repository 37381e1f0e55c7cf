"""The `patch` verb: check, diff, apply or revert the SM120 patch on SGLang / vLLM tables."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symmtui import boundary, clitext
from symmtui.errors import UserError

if TYPE_CHECKING:
    from symmtui.gpu.facts import PatchFacts
    from symmtui.patch.capability import Capability
    from symmtui.patch.report import CheckReport

HELP = "check / diff / apply / revert the SM120 (capability 12) patch on SGLang or vLLM's symmetric-memory tables"

ACTIONS = ("check", "diff", "apply", "revert")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``patch ACTION [--site DIR] [--package P] [--capability M[.m]] [--python PY] [--json] [--force]``."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "exit codes: check 0 nothing to do, 1 patch needed, 3 a hand edit / missing donor apply won't fix;\n"
        "apply/revert 0 done or already so; 2 usage or unsupported layout; 3 refused, nothing changed.\n"
        "Originals and a manifest are kept in $XDG_STATE_HOME/symmtui/patches."
    )
    parser.add_argument("action", choices=ACTIONS, help="check (exit 1 = patch needed), diff, apply, revert")
    parser.add_argument("--site", type=lambda s: Path(boundary.path(s)), metavar="DIR", help="site-packages, venv or source tree to patch")
    parser.add_argument("--package", choices=("sglang", "vllm"), help="only this package (default: all found)")
    parser.add_argument(
        "--capability", metavar="M[.m]", help="GPU compute capability, e.g. 12 or 12.0 (default: from the GPUs)"
    )
    parser.add_argument("--python", metavar="PY", type=boundary.path, help="find the packages of this interpreter (a launch's python)")
    parser.add_argument("--profile", metavar="FILE", type=boundary.path, help="find the packages of this launch profile's python")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--force", action="store_true", help="revert even if a file changed since the patch")
    parser.add_argument(
        "--follow-symlinks", action="store_true",
        help="apply/revert even when a table file is a symlink (the file it points to is written)",
    )


def _gpu_facts() -> PatchFacts:
    """The host's capabilities and NVLink between every pair, from the one source the dashboard asks too."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.gpu.facts import patch_facts
    from symmtui.gpu.nvml import Nvml

    nvml = Nvml()
    try:
        return patch_facts(nvml)
    finally:
        nvml.shutdown()


def _profile_python(path: str) -> tuple[str, dict[str, str], Path | None, list[str]]:
    """The interpreter a launch profile's command runs, with the env and cwd it runs with, and the command."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.launch.profile import load_profile
    from symmtui.patch.preflight import launch_python

    profile = load_profile(path)
    if profile.argv is None:
        raise UserError(f"profile {path} has no server command: pass --python or --site instead")
    argv = list(profile.argv)
    if profile.shell and len(argv) == 3:
        argv = [argv[2]]
    env = dict(profile.env)
    python = launch_python(argv, env)
    if python is None:
        raise UserError(f"cannot tell which python profile {path} runs: pass --python or --site instead")
    return python, env, profile.cwd, argv


def _targets(args: argparse.Namespace) -> list[tuple[str, Path | None, str | None]]:
    """(package, site, python) for each package to work on."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.patch.finder import locate

    wanted = [args.package] if args.package else ["sglang", "vllm"]
    if args.profile:
        if args.python or args.site is not None:
            raise UserError("pass one of --site, --python or --profile")
        python, env, cwd, argv = _profile_python(args.profile)
        found = locate(wanted, python=python, env=env, cwd=cwd, argv=argv)
        if not found:
            raise UserError(f"{' or '.join(wanted)} is not installed for {python} (profile {args.profile})")
        return [(inst.package, inst.root, None) for inst in found]
    if args.site is not None and args.python:
        raise UserError("pass one of --site, --python or --profile")
    if args.package:
        return [(args.package, args.site, args.python)]
    found = locate(wanted, site=args.site, python=args.python)
    if not found:
        where = (
            f"under {args.site}" if args.site else (f"for {args.python}" if args.python else "on this interpreter's path")
        )
        raise UserError(
            f"neither sglang nor vllm is installed {where}: pass --site DIR (its site-packages or source tree)"
        )
    return [(inst.package, args.site, args.python) for inst in found]


def _print_report(report: CheckReport, site: Path | None, python: str | None) -> None:
    clitext.emit(f"{report.package} {report.version or '(version unknown)'} at {report.root}")
    if report.package_link is not None:
        clitext.emit(f"  found through the symlink {report.package_link}")
    clitext.emit(f"  layout {report.layout} ({report.releases}); capability {report.capability} -> key {_k(report.key)}")
    for t in report.tables:
        keys = ", ".join(t.keys)
        has = "present" if t.has_key else "missing"
        clitext.emit(f"  {t.name}  {t.relpath.rsplit('/', 1)[-1]}:{t.line}  keys {keys}  -> {_k(report.key)} {has}"
              f"  (read with {_style(t.lookup)})")
        if t.real_file is not None:
            clitext.emit(f"    {t.file} is a symlink: the real file is {t.real_file}")
    clitext.emit(f"  {report.summary}")
    if report.state == "needed":
        clitext.emit(f"  patch needed: symmtui patch apply{_flags(report, site, python)}")
        if report.write_problem:
            clitext.emit(f"  note: {report.write_problem}")
    if report.symlink_problem:
        clitext.emit(f"  note: {report.symlink_problem}")
    if report.detail:
        for line in report.detail.splitlines():
            clitext.emit(f"  {line}")
    for caveat in report.caveats:
        clitext.emit(f"  caveat: {caveat}")


def _k(key: int | str) -> str:
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.patch.capability import key_text

    return key_text(key)


def _style(style: str) -> str:
    return {
        "subscript": "table[cap]: KeyError when missing",
        "get": ".get(): tolerant",
        "guarded": "a membership test first: tolerant",
        "none": "not read in that file",
        "indirect": "an indirect reference: unknown",
    }.get(style, style)


def _where(site: Path | None, python: str | None) -> str:
    """The location flags that find this install again (for the commands we suggest)."""
    if site is not None:
        return f" --site {shlex.quote(str(site))}"
    return f" --python {shlex.quote(python)}" if python else ""


def _flags(report: CheckReport, site: Path | None, python: str | None) -> str:
    return f"{_where(site, python)} --package {report.package} --capability {report.capability}"


def run(args: argparse.Namespace) -> int:
    """Run one action over the selected packages; the exit code is the worst of theirs."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.patch.capability import Capability
    from symmtui.patch.errors import PatchError

    cap: Capability | None = None
    nvlink: bool | None = None
    others: tuple[tuple[int, int], ...] = ()
    try:
        if args.follow_symlinks and args.action not in ("apply", "revert"):
            raise UserError(f"--follow-symlinks is only for apply and revert; {args.action} writes nothing")
        if args.force and args.action != "revert":
            raise UserError(f"--force is only for revert; {args.action} never overwrites a file that changed")
        targets = _targets(args)
        if args.action != "revert":
            cap = Capability.parse(args.capability) if args.capability else None
            facts = _gpu_facts()  # NVLink facts feed the caveat even with --capability
            nvlink = facts.nvlink
            if cap is None and facts.capability is not None:
                cap = Capability.of(facts.capability)
                others = facts.capabilities.also_needed  # a mixed host: its other capabilities read the tables too
            if cap is None:
                raise UserError(
                    f"cannot read the GPUs' compute capability ({facts.reason}): "
                    "pass --capability 12 (SGLang) or 12.0 (vLLM)"
                )
    except UserError as exc:
        if args.json:  # still one JSON document on stdout; the one-line error goes to stderr as usual
            doc = {"action": args.action, "capability": str(cap) if cap else None, "results": [],
                   "error": str(exc), "exit_code": exc.exit_code}
            clitext.emit(json.dumps(doc, indent=2))
        raise
    results: list[dict[str, Any]] = []
    code = 0
    for pkg, site, python in targets:
        try:
            rc, data = _one(args, pkg, site, cap, nvlink, python, others)
        except PatchError as exc:
            rc = exc.exit_code
            data = {"package": pkg, "error": str(exc), "reason": exc.reason, "detail": exc.detail, "exit_code": rc}
            if not args.json:
                clitext.print_error(f"{pkg}: {exc}")
                for line in exc.detail.splitlines():
                    clitext.emit(f"  {line}", sys.stderr)
        except UserError as exc:
            if len(targets) == 1 and not args.json:
                raise
            rc = exc.exit_code
            data = {"package": pkg, "error": str(exc), "exit_code": rc}
            if not args.json:
                clitext.print_error(f"{pkg}: {exc}")
        results.append(data)
        code = max(code, rc)
    if args.json:
        out = {"action": args.action, "capability": str(cap) if cap else None, "results": results, "exit_code": code}
        clitext.emit(json.dumps(out, indent=2))
    return code


def _one(
    args: argparse.Namespace,
    pkg: str,
    site: Path | None,
    cap: Capability | None,
    nvlink: bool | None,
    python: str | None,
    others: tuple[tuple[int, int], ...] = (),
) -> tuple[int, dict[str, Any]]:
    """One action on one package: print its text (unless --json); (exit code, JSON result)."""
    # the verb's work, imported when it runs (every start imports this module: cli.VERBS)
    from symmtui.patch import engine
    from symmtui.patch.hostcaps import with_others

    if args.action == "revert":
        reverted = engine.revert(site, pkg, python=python, force=args.force, follow_symlinks=args.follow_symlinks)
        if not args.json:
            _print_files(pkg, reverted.message, "restored", reverted.files, reverted.symlinks)
        return 0, reverted.to_json()
    if cap is None:  # run() resolves it for every action but revert
        raise UserError("pass --capability 12 (SGLang) or 12.0 (vLLM)")
    if args.action == "check":
        report = with_others(engine.check(site, pkg, cap, python=python, nvlink=nvlink), others)
        if not args.json:
            _print_report(report, site, python)
        return report.exit_code, report.to_json()
    if args.action == "diff":
        text = engine.diff(site, pkg, cap, python=python)
        if not args.json:
            if text:
                clitext.emit(text.removesuffix("\n"))
            else:
                clitext.emit(f"{pkg}: nothing to change for capability {cap} (see symmtui patch check)", sys.stderr)
        return 0, {"package": pkg, "diff": text}
    if args.action == "apply":
        result = engine.apply(site, pkg, cap, python=python, nvlink=nvlink, follow_symlinks=args.follow_symlinks)
        if not args.json:
            _print_files(pkg, result.message, "changed", result.files, result.symlinks)
            if result.record_dir:
                undo = f"symmtui patch revert{_where(site, python)} --package {pkg}"
                clitext.emit(f"  originals saved in {result.record_dir} (undo: {undo})")
            for caveat in result.caveats:
                clitext.emit(f"  caveat: {caveat}")
        return 0, result.to_json()
    raise UserError(f"unknown action {args.action!r}: use check, diff, apply or revert")


def _print_files(
    pkg: str, message: str, verb: str, files: tuple[Path, ...], symlinks: tuple[tuple[Path, Path], ...]
) -> None:
    """An apply/revert result: its message, each file it wrote, and the real file behind each symlink."""
    clitext.emit(f"{pkg}: {message}")
    for f in files:
        clitext.emit(f"  {verb} {f}")
    for link, real in symlinks:
        clitext.emit(f"  ({real} through the symlink {link})")
