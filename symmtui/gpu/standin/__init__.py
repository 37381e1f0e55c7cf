"""A pynvml stand-in driven by scenarios, for tests and the demo: ``load_standin("rtx-pro-6000-x8-pcie")``."""

from __future__ import annotations

import json
import threading
import time
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from symmtui import boundary
from symmtui.gpu.standin.host import StandinHost
from symmtui.gpu.standin.module import build_module
from symmtui.gpu.standin.scenarios import SCENARIOS, scenario_data

ENV_VAR = "SYMMTUI_NVML_STANDIN"
MAX_RECORDING_BYTES = 32 << 20  # a recording of a large host is well under 1 MiB


def load_standin(
    scenario: str | Path | Mapping[str, Any],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> types.ModuleType:
    """A fresh pynvml-shaped module for ``scenario`` (a name from SCENARIOS, a recording's path, or its data).

    The module's ``standin`` attribute is the :class:`StandinHost`: the demo's driver
    (``set_load``, ``add_process``, ``remove_process``) and the tests' fault hooks
    (``fail_init``, ``lose_gpu``, ``not_supported``, ``slow``).
    """
    data: object
    if isinstance(scenario, Mapping):
        data = scenario
    elif isinstance(scenario, Path) or (isinstance(scenario, str) and (scenario.endswith(".json") or "/" in scenario)):
        path = Path(scenario)
        # Through the CLI boundary: a FIFO, a device or a directory is refused before it is opened,
        # the read is capped, bad UTF-8 is named (an InputError is a ValueError too).
        text = boundary.read_text(path, what="cannot read the stand-in recording", max_bytes=MAX_RECORDING_BYTES)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})") from exc
        except RecursionError:
            raise ValueError(f"{path} is not a stand-in recording (nested too deep)") from None
    else:
        data = scenario_data(scenario)
    return build_module(StandinHost(_checked(data, str(scenario)), clock))


def _checked(data: object, where: str) -> Mapping[str, Any]:
    """The scenario if it has the shape a recording has (a "devices" list of objects), else ValueError."""
    devices = data.get("devices") if isinstance(data, Mapping) else None
    if not isinstance(devices, list) or not devices or not all(isinstance(d, Mapping) for d in devices):
        raise ValueError(
            f"{where[:200]} is not a stand-in recording (no \"devices\" list): "
            "make one with python -m symmtui.gpu.standin.record OUT.json"
        )
    return cast("Mapping[str, Any]", data)


_SHARED: dict[str, types.ModuleType] = {}
_SHARED_LOCK = threading.Lock()


def shared_standin(scenario: str) -> types.ModuleType:
    """One stand-in module per scenario name for this process (what $SYMMTUI_NVML_STANDIN gives every Nvml()).

    The demo drives it (``shared_standin(name).standin.set_load(0.4)``) and the dashboard's Nvml sees it.
    """
    with _SHARED_LOCK:
        mod = _SHARED.get(scenario)
        if mod is None:
            mod = _SHARED[scenario] = load_standin(scenario)
        return mod


def standin_host(module: types.ModuleType) -> StandinHost:
    """The host behind a module made by :func:`load_standin`."""
    host = getattr(module, "standin", None)
    if not isinstance(host, StandinHost):
        raise TypeError("not a stand-in module")
    return host


__all__ = ["ENV_VAR", "SCENARIOS", "StandinHost", "load_standin", "shared_standin", "standin_host"]
