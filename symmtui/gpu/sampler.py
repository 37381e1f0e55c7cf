"""One background thread that samples every GPU at an interval and hands each round to its consumer (``on_sample``)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from msgspec import Struct

from symmtui.gpu.nvml import Nvml
from symmtui.gpu.results import GpuInfo, GpuSample
from symmtui.gpu.source import GpuSource, as_source


class GpuSnapshot(Struct, frozen=True):
    """Everything one sampling round saw, handed to ``on_sample`` and kept as ``latest()``."""

    time: float  # time.time() at the start of the round
    infos: tuple[GpuInfo, ...]
    samples: tuple[GpuSample, ...]
    cost_seconds: float  # wall time of the round (NVML calls + process lookups)
    unavailable_reason: str | None = None
    calls: int = 0  # NVML calls (an exporter: HTTP requests) in the round
    slowest_call: str = ""  # the slowest NVML function of the round
    slowest_call_seconds: float = 0.0
    seq: int = 0  # 1, 2, 3... per sampler

    @property
    def lost(self) -> tuple[int, ...]:
        """Indices of GPUs marked lost."""
        return tuple(s.index for s in self.samples if s.lost)


class GpuSampler:
    """Samples in its own thread (never the caller's); ``latest()`` never blocks on NVML.

    A slow NVML call delays only this thread: ``busy_for()`` tells how long the round in flight
    has run, so a UI can say "NVML slow (2.0 s)" while it keeps drawing the last snapshot.
    """

    def __init__(
        self,
        nvml: Nvml | GpuSource,
        interval: float = 1.0,
        on_sample: Callable[[GpuSnapshot], None] | None = None,
    ) -> None:
        if not interval > 0 or not math.isfinite(interval):
            raise ValueError(f"sampling interval must be a positive number of seconds, got {interval!r}")
        self.source = as_source(nvml)
        """Where the GPUs are read: local NVML (``symmtui.gpu.source.NvmlSource``) or an exporter."""
        self.interval = float(interval)
        self.on_sample = on_sample
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._latest: GpuSnapshot | None = None
        self._round_started: float | None = None
        self._seq = 0
        self.callback_errors = 0
        self.sample_errors = 0
        self.last_error: str | None = None

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="symmtui-gpu-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Ask the thread to stop and wait up to ``timeout``; False if a stuck NVML call still holds it."""
        self._stop.set()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def running(self) -> bool:
        """True while the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> GpuSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- reading -----------------------------------------------------------------------------
    def latest(self) -> GpuSnapshot | None:
        """The last finished snapshot (None before the first)."""
        with self._lock:
            return self._latest

    def busy_for(self) -> float:
        """Seconds the round in flight has taken so far (0.0 when idle)."""
        started = self._round_started
        return 0.0 if started is None else max(0.0, time.perf_counter() - started)

    # ---- sampling ----------------------------------------------------------------------------
    def sample_once(self) -> GpuSnapshot:
        """One round, on the calling thread (the verb and the benchmark use this); kept as ``latest()``."""
        wall = time.time()
        t0 = time.perf_counter()
        self._round_started = t0
        try:
            reading = self.source.read()
        finally:
            self._round_started = None
        cost = time.perf_counter() - t0
        infos, samples, stats = reading.infos, reading.samples, reading.stats
        with self._lock:
            self._seq += 1
            snap = GpuSnapshot(
                time=wall,
                infos=infos,
                samples=samples,
                cost_seconds=cost,
                unavailable_reason=reading.unavailable_reason,
                calls=stats.calls if stats is not None else 0,
                slowest_call=stats.slowest if stats is not None else "",
                slowest_call_seconds=stats.slowest_s if stats is not None else 0.0,
                seq=self._seq,
            )
            self._latest = snap
        return snap

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                snap = self.sample_once()
            except Exception as exc:  # noqa: BLE001 - a bug must not end sampling silently: kept, counted
                self.sample_errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._stop.wait(self.interval)
                continue
            if self.on_sample is not None and not self._stop.is_set():
                try:
                    self.on_sample(snap)
                except Exception as exc:  # noqa: BLE001 - a broken consumer must not kill sampling; counted, kept
                    self.callback_errors += 1
                    self.last_error = f"on_sample: {type(exc).__name__}: {exc}"
            next_at += self.interval
            now = time.monotonic()
            if next_at < now:  # a slow round: skip the missed ticks instead of bursting
                next_at = now + self.interval
            self._stop.wait(next_at - now)
