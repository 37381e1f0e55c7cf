"""The `launch` verb: stop what this profile launched before, launch it again, wait like `symmtui wait`."""

from __future__ import annotations

import argparse

HELP = "launch the profile's server (stopping the previous one) and wait for it like `symmtui wait`"

EXIT_BLOCKED = 4  # the port is still held by a stranger, or a process survived SIGKILL
EXIT_PREFLIGHT = 3  # --strict-preflight and the patch check predicts a KeyError crash


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="profile (default ./symmtui.toml, then the XDG config dir)")
    parser.add_argument("--timeout", type=float, metavar="S", help="give up after S seconds (default: the profile's, 900; 0: never)")
    parser.add_argument("--stall", type=float, metavar="S", help="stalled after S seconds without progress (default: the profile's, 300; 0: never)")
    parser.add_argument("--grace", type=float, metavar="S", help="stopping the previous server: SIGTERM to SIGKILL (default 30)")
    parser.add_argument("--no-preflight", action="store_true", help="skip the SM120 patch check before launching")
    parser.add_argument(
        "--strict-preflight", action="store_true",
        help="refuse to launch (exit 3) when the patch check predicts the KeyError crash (default: warn)",
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from symmtui.errors import UserError
    from symmtui.gpu.facts import launcher_facts
    from symmtui.launch import Supervisor, load_profile
    from symmtui.launch.cliout import ProgressPrinter

    check_seconds(args, "timeout", "stall", "grace")
    profile = load_profile(args.config)
    if profile.attach_only:
        raise UserError(f"cannot launch: {profile.attach_reason}")

    from symmtui.core import diagnose
    from symmtui.core.readiness import ReadinessConfig
    from symmtui.core.rules import RuleSet
    from symmtui.core.waiting import wait_for
    from symmtui.launch import history, ports

    if profile.url is not None:
        from symmtui.core.probe import check_url

        check_url(profile.url)
    ruleset = RuleSet().with_user(ready=profile.ready, crash=profile.crash)
    timeout = profile.timeout if args.timeout is None else args.timeout
    stall = profile.stall if args.stall is None else args.stall
    config = ReadinessConfig(timeout=timeout or None, stall=stall or None)
    gpu_pids, capability = launcher_facts()
    sup = Supervisor(profile, gpu_pids=gpu_pids, grace=args.grace)
    err = sys.stderr
    result = sup.relaunch(
        ProgressPrinter(err),
        preflight=not args.no_preflight,
        capability=capability,
        block_on_prediction=args.strict_preflight,
    )
    for w in result.warnings:
        print(f"symmtui: {w}", file=err)
    rec = result.record
    print(f"symmtui: launched pid {rec.pid}; log {rec.log_path}", file=err)
    est = sup.estimate()
    if est is not None:
        took = f"{est.total:.1f}" if est.total < 60 else f"{est.total:.0f}"
        print(f"symmtui: earlier launches of this command were ready after {took} s "
              f"(median of {est.samples})", file=err)
    err.flush()
    diagnose.set_port_owner_hook(ports.port_owner)
    try:
        waited = wait_for(rec.log_path, url=profile.url, pid=rec.pid, ruleset=ruleset, config=config)
    except KeyboardInterrupt:
        print(f"\nsymmtui: stopped waiting; the server is still running (pid {rec.pid}); "
              "`symmtui stop` ends it", file=err)
        return 130
    finally:
        diagnose.set_port_owner_hook(None)
    snap = waited.snapshot
    verdict = history.verdict_of(snap.state)
    phases: dict[str, float] = {}
    for span in snap.phases:
        dur = span.duration(snap.elapsed)
        if span.name != "ready" and dur is not None:
            phases[span.name] = round(dur, 3)
    cause = snap.cause.headline() if snap.cause is not None else (snap.detail or None)
    patch_state = _patch_state(result.prediction, preflight_ran=not args.no_preflight and capability is not None)
    sup.finish(rec, verdict, cause=cause if verdict != "ready" else None, phases=phases, patch=patch_state)
    if verdict != "ready" and sup.is_alive(rec):
        print("symmtui: processes of this launch are still running; `symmtui stop` ends them", file=err)
    return waited.exit_code


def check_seconds(args: argparse.Namespace, *names: str) -> None:
    """Refuse a negative, NaN or infinite ``--NAME`` option in one line (exit 2)."""
    import math

    from symmtui.errors import UserError

    for name in names:
        value = getattr(args, name.replace("-", "_"))
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise UserError(f"--{name} must be a number of seconds >= 0 (got {value})")


def _patch_state(prediction: object | None, *, preflight_ran: bool) -> str | None:
    """What the history records about the SM120 patch at launch time."""
    if not preflight_ran:
        return None
    if prediction is None:
        return "no crash predicted"
    outcome = getattr(prediction, "outcome", None)
    return f"predicted {outcome}" if isinstance(outcome, str) else "crash predicted"
