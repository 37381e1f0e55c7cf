"""The versions a launch ran with (symmtui, sglang, vllm, torch, NCCL, the driver) and its GPUs, read in the
background when it starts so the history can keep them at its verdict without the verdict waiting for them.

One environment capture serves a launch: the bundle recorder asks for it first (``session_capture``)
and the next launch, when it runs that same command, takes that capture for its versions, so the server's
interpreter is probed once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from symmtui import __version__
from symmtui.errors import UserError
from symmtui.launch.envinfo import GpuFact, ServerCommand, capture

if TYPE_CHECKING:
    from symmtui.gpu.nvml import Nvml
    from symmtui.launch.envinfo import EnvInfo
    from symmtui.launch.profile import Profile

KEEP = 16  # launches whose probe is kept (a long dashboard session relaunches many times)
DELAY = 1.0
"""Seconds after the launch before the read starts: the server's (and the other nodes') start comes first;
the read (child interpreters, an import of torch) competes for the CPU. A load takes minutes."""


def versions_of(info: EnvInfo) -> dict[str, str]:
    """The version fields of an EnvInfo that are known (an absent key: not installed or not read)."""
    out = {"symmtui": info.symmtui}
    for name, ver in info.versions:
        if ver is not None:
            out[name] = ver
    for name, value in (("nccl", info.nccl), ("cuda (torch)", info.torch_cuda), ("driver", info.driver),
                        ("cuda driver", info.cuda_driver)):
        if value:
            out[name] = value
    return out


class SharedCapture:
    """One environment capture read by several (the recorder, the history): the first ``get`` runs it, the
    others wait for its result (or its error)."""

    def __init__(self, fn: Callable[[], EnvInfo], command: ServerCommand | None = None) -> None:
        self._fn = fn
        self.command = command
        """The command ``fn`` captures (None: not said): a launch takes the capture only for this command."""
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._started = False
        self._result: EnvInfo | None = None
        self._error: BaseException | None = None

    def started(self) -> bool:
        """True once a ``get`` has begun the capture."""
        with self._lock:
            return self._started

    def get(self) -> EnvInfo:
        """The capture (run here by the first caller, waited for by the others); its error raised again."""
        with self._lock:
            first = not self._started
            self._started = True
        if first:
            try:
                self._result = self._fn()
            except BaseException as exc:
                self._error = exc
                raise
            finally:
                self._done.set()
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


class VersionProbe:
    """One background read of the environment per launch (``start``); ``get`` never waits."""

    def __init__(self, nvml: Nvml | None = None) -> None:
        self.nvml = nvml
        self._lock = threading.Lock()
        self._found: dict[str, tuple[dict[str, str], tuple[GpuFact, ...]] | None] = {}
        """launch_id -> (versions, GPUs) (None: still reading)"""
        self._pending: SharedCapture | None = None  # asked for before the next launch: that launch takes it
        self._launched = False

    def session_capture(self, fn: Callable[[], EnvInfo], command: ServerCommand) -> SharedCapture:
        """A capture of ``command`` made with ``fn`` (the bundle recorder's, which reads it at once); the next
        launch reads its versions from it too when it runs that same command, so one probe serves both.

        Only before this probe's first launch: a capture asked for later (the demo's recorder, after its
        first launch) would be older than the next launch; it is the asker's alone."""
        with self._lock:
            if self._launched:
                return SharedCapture(fn, command)
            if self._pending is None or self._pending.command != command:
                self._pending = SharedCapture(fn, command)
            return self._pending

    def start(self, launch_id: str, profile: Profile, alive: Callable[[], bool] | None = None) -> None:
        """Read the versions the profile's command runs with on a daemon thread (child interpreters, NVML),
        DELAY seconds from now, unless ``alive`` says by then that the launch is gone; returns at once."""
        with self._lock:
            self._found[launch_id] = None
            while len(self._found) > KEEP:
                self._found.pop(next(iter(self._found)))
            shared, self._pending = self._pending, None
            self._launched = True

        command = ServerCommand.from_profile(profile)
        if shared is not None and shared.command != command:
            shared = None  # made for another command (the profile changed since): this launch reads its own

        def work() -> None:
            if shared is None or not shared.started():
                time.sleep(DELAY)
            if alive is not None and not alive():
                return  # stopped or crashed at once: nobody waits for its versions (symmtui's are kept)
            if shared is None:  # capture never raises: what cannot be read is None (and left out)
                info = capture(command, nvml=self.nvml)
            else:
                try:
                    info = shared.get()
                except (OSError, UserError, ValueError):
                    return  # the recorder's capture failed (it says so in its bundle): symmtui's are kept
            found = (versions_of(info), info.gpus)
            with self._lock:
                if launch_id in self._found:
                    self._found[launch_id] = found

        threading.Thread(target=work, name="symmtui-versions", daemon=True).start()

    def get(self, launch_id: str) -> Mapping[str, str]:
        """The versions read for ``launch_id``; symmtui's alone while still reading (or never started)."""
        with self._lock:
            found = self._found.get(launch_id)
            return dict(found[0]) if found is not None else {"symmtui": __version__}

    def gpus(self, launch_id: str) -> tuple[GpuFact, ...]:
        """The GPUs read for ``launch_id`` (none while still reading, never started, or without NVML)."""
        with self._lock:
            found = self._found.get(launch_id)
            return found[1] if found is not None else ()
