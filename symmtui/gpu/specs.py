"""GPU sources from their specs (``"nvml"`` or an exporter's URL): checked, then opened; several as one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from symmtui.errors import UserError
from symmtui.gpu.source import NVML, GpuSource, NvmlSource
from symmtui.textsafe import visible

if TYPE_CHECKING:
    from symmtui.gpu.nvml import Nvml

__all__ = ["NVML", "check_specs", "open_source", "open_sources", "spec_problem"]


def spec_problem(spec: str) -> str | None:
    """Why ``spec`` names no GPU source (None: it does): ``"nvml"`` or an exporter's http(s) URL with a host."""
    if spec.strip().lower() == NVML:
        return None
    # the exporter module (httpx, ~50 ms): a profile's [gpus] and --gpus are checked on error paths too
    from symmtui.gpu.exporter import check_source_url

    try:
        check_source_url(spec)
    except UserError:
        return (f'must be "nvml" or an exporter\'s http(s) URL, e.g. http://127.0.0.1:9400/metrics '
                f"(dcgm-exporter), got {visible(spec)!r}")
    return None


def check_specs(specs: list[str] | tuple[str, ...], what: str) -> tuple[str, ...]:
    """The specs, each checked: a UserError (one line naming ``what``, e.g. ``--gpus``) for the first bad one."""
    for spec in specs:
        problem = spec_problem(spec)
        if problem is not None:
            raise UserError(f"{what} {problem}")
    return tuple(specs)


def open_source(spec: str, *, nvml: Nvml | None = None, timeout: float = 2.0) -> GpuSource:
    """The source a spec names: ``"nvml"`` (this machine; ``nvml`` or a new ``Nvml()``) or an exporter's
    URL (dcgm-exporter, nvitop-exporter, or a Prometheus server's ``/api/v1/query``).

    A malformed URL is a UserError (one line, exit 2); an unreachable one is not (the source reads as
    unavailable until it answers: :func:`symmtui.gpu.exporter.ExporterSource.scrape` raises instead).
    """
    if spec.strip().lower() == NVML:
        from symmtui.gpu.nvml import Nvml  # NVML: only an nvml source

        return NvmlSource(nvml if nvml is not None else Nvml())
    from symmtui.gpu.exporter import ExporterSource  # httpx (~50 ms): only an exporter source

    return ExporterSource(spec, timeout=timeout)


def open_sources(specs: list[str] | tuple[str, ...], *, nvml: Nvml | None = None, timeout: float = 2.0) -> GpuSource:
    """One source for several specs: the one itself, or a :class:`symmtui.gpu.multi.MultiSource` that
    reads them all and groups the GPUs by host."""
    sources = [open_source(s, nvml=nvml, timeout=timeout) for s in specs]
    if len(sources) == 1:
        return sources[0]
    from symmtui.gpu.multi import MultiSource  # only several sources

    return MultiSource(sources)
