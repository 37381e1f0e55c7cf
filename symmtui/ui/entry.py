"""Assemble and run the dashboard: for a profile / log / URL (`symmtui`) or for the demo (`symmtui demo`)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from pathlib import Path

from symmtui.errors import UserError
from symmtui.ui.controller import Controller
from symmtui.ui.patching import Patcher
from symmtui.ui.themes import DEFAULT_THEME, load_themes

ATTACH_TAIL_LINES = 5000


def check_theme(name: str | None) -> str:
    """The theme to start with; an unknown name is a UserError listing the known ones."""
    themes = load_themes()
    chosen = name or DEFAULT_THEME
    if chosen not in themes:
        known = ", ".join(sorted(themes)) or "(none found)"
        raise UserError(f"unknown theme {chosen!r}; known themes: {known}")
    return chosen


def build_demo_controller(speed: float) -> tuple[Controller, object]:
    """The demo: temp dir, sandbox, simulated server's first launch, stand-in NVML; the controller."""
    from symmtui.demo.story import HOST_NAME, PROFILE_NAME, build_demo
    from symmtui.gpu.facts import patch_facts

    demo = build_demo(speed)
    controller = Controller(
        host=HOST_NAME,
        profile_name=PROFILE_NAME,
        supervisor=demo.supervisor,
        nvml=demo.nvml,
        patcher=Patcher(site=demo.site, package="sglang", facts=lambda: patch_facts(demo.nvml)),
    )
    controller.on_close.append(demo.close)
    try:
        engine = demo.engine(controller.on_engine_update)
    except BaseException:
        demo.close()
        raise
    controller.set_engine(engine, str(engine.log_path) if engine.log_path else None)
    return controller, demo


def run_demo(speed: float, theme: str | None) -> int:
    """`symmtui demo`: build, run the app, and on quit stop the demo's servers and remove its temp dir."""
    from symmtui.ui.app import SymmApp

    chosen = check_theme(theme)
    controller, _demo = build_demo_controller(speed)
    try:
        result = SymmApp(controller, theme=chosen).run()
    finally:
        # The terminal may be gone (SIGHUP): the note is best effort, the cleanup is not.
        with contextlib.suppress(OSError):
            print("symmtui demo: stopping the demo server and removing its temp dir…", file=sys.stderr)
        controller.close()
    return result or 0


def _python_of(argv: tuple[str, ...] | None) -> str | None:
    """The interpreter a launch command runs (to find the SGLang it imports), if it names one."""
    if not argv:
        return None
    first = os.path.basename(argv[0])
    return argv[0] if first.startswith("python") else None


def build_dashboard_controller(config: str | None, log: str | None, url: str | None) -> Controller:
    """`symmtui [--config FILE] [--log PATH] [--url URL]`: the controller for a profile or an attach."""
    from symmtui.core.engine import Bringup
    from symmtui.core.readiness import ReadinessConfig
    from symmtui.core.rules import RuleSet
    from symmtui.gpu.facts import gpu_pids_from, patch_facts
    from symmtui.gpu.nvml import Nvml
    from symmtui.launch.profile import find_profile, load_profile
    from symmtui.launch.supervisor import Supervisor

    profile = None
    if config is not None or (log is None and url is None and find_profile(None) is not None):
        profile = load_profile(config)
    if profile is None and log is None and url is None:
        raise UserError(
            "nothing to watch: pass --log PATH (a server log), --url URL (its /health), or --config FILE "
            "(a launch profile; ./symmtui.toml is used when present); try `symmtui demo` first"
        )
    nvml = Nvml()
    supervisor = None
    pid = None
    log_path: str | None = log
    ruleset = RuleSet()
    config_r = ReadinessConfig()
    name = "attach"
    if profile is not None:
        ruleset = RuleSet().with_user(ready=profile.ready, crash=profile.crash)
        config_r = ReadinessConfig(timeout=profile.timeout or None, stall=profile.stall or None)
        name = profile.path.stem if profile.path is not None else "profile"
        if profile.path is not None and profile.path.name == "symmtui.toml":
            name = f"{profile.path.parent.name}/symmtui.toml"
        supervisor = Supervisor(profile, gpu_pids=gpu_pids_from(nvml))
        record = supervisor.current()
        if record is not None and supervisor.is_alive(record):
            pid = record.pid
            log_path = log_path or record.log_path
        url = url or profile.url
        if log_path is None and profile.log_path is not None:
            log_path = str(profile.log_path)
    elif log is not None:
        name = f"attach {Path(log).name}"
    controller = Controller(
        host=socket.gethostname(),
        profile_name=name,
        supervisor=supervisor,
        nvml=nvml,
        patcher=None,
    )
    controller.patcher = Patcher(
        site=None,
        package=None,
        facts=lambda: patch_facts(nvml, controller.topology),
        python=_python_of(profile.argv if profile is not None else None),
    )
    engine = Bringup(
        log_path, ruleset=ruleset, config=config_r, url=url, pid=pid,
        tail_lines=ATTACH_TAIL_LINES, on_update=controller.on_engine_update,
    )
    controller.set_engine(engine, log_path)
    return controller


def run_dashboard(config: str | None, log: str | None, url: str | None, theme: str | None) -> int:
    """The no-verb dashboard."""
    from symmtui.ui.app import SymmApp

    chosen = check_theme(theme)
    controller = build_dashboard_controller(config, log, url)
    try:
        result = SymmApp(controller, theme=chosen).run()
    finally:
        controller.close()
    return result or 0
