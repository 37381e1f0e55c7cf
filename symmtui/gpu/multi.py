"""Several GPU sources read as one: every source in its own thread each round, GPUs grouped by host."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from msgspec.structs import replace

from symmtui.gpu.results import CallStats, GpuInfo, GpuSample
from symmtui.gpu.source import GpuSource, Reading


class MultiSource:
    """Reads every source at once (a slow exporter delays the round by its own timeout, not the sum) and
    numbers the GPUs 0..N-1 in host order; each GpuInfo keeps its ``host`` (this machine's NVML GPUs:
    ``host=None``, listed first). The round is unavailable only when every source is."""

    def __init__(self, sources: list[GpuSource]) -> None:
        if not sources:
            raise ValueError("MultiSource needs at least one source")
        self.sources = list(sources)
        self._pool = ThreadPoolExecutor(max_workers=len(self.sources), thread_name_prefix="symmtui-gpu-source")

    @property
    def label(self) -> str:
        return ", ".join(s.label for s in self.sources)

    def read(self) -> Reading:
        t0 = time.perf_counter()
        readings = list(self._pool.map(lambda s: s.read(), self.sources))
        pairs: list[tuple[str, int, GpuInfo, GpuSample | None]] = []
        reasons: list[str] = []
        calls = 0
        slowest, slowest_s = "", 0.0
        for order, (source, r) in enumerate(zip(self.sources, readings, strict=True)):
            if r.unavailable_reason is not None and not r.infos:
                reasons.append(r.unavailable_reason if source.label in r.unavailable_reason
                               else f"{source.label}: {r.unavailable_reason}")
            by_index = {s.index: s for s in r.samples}
            for info in r.infos:
                pairs.append((info.host or "", order, info, by_index.get(info.index)))
            if r.stats is not None:
                calls += r.stats.calls
                if r.stats.slowest_s >= slowest_s:
                    slowest, slowest_s = r.stats.slowest, r.stats.slowest_s
        pairs.sort(key=lambda p: (p[0] != "" , p[0], p[1], p[2].index))
        infos: list[GpuInfo] = []
        samples: list[GpuSample] = []
        for i, (_host, _order, info, sample) in enumerate(pairs):
            infos.append(replace(info, index=i,
                                             host_index=info.host_index if info.host is not None else info.index))
            if sample is not None:
                samples.append(replace(sample, index=i))
        reason = "; ".join(reasons) if reasons and not infos else None
        stats = CallStats(calls, time.perf_counter() - t0, slowest, slowest_s)
        return Reading(tuple(infos), tuple(samples), reason, stats)

    def close(self) -> None:
        for s in self.sources:
            s.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
