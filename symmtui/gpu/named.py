"""A GPU source whose GPUs are shown under a node's name (a multi-node profile groups GPU rows by node)."""

from __future__ import annotations

from msgspec.structs import replace

from symmtui.gpu.source import GpuSource, Reading


class NamedSource:
    """``source`` with every GPU's ``host`` set to ``node`` (its own number kept as ``host_index``)."""

    def __init__(self, source: GpuSource, node: str) -> None:
        self.source = source
        self.node = node

    @property
    def label(self) -> str:
        return f"{self.node}: {self.source.label}"

    def read(self) -> Reading:
        r = self.source.read()
        infos = tuple(replace(i, host=self.node,
                                          host_index=i.host_index if i.host_index is not None else i.index)
                      for i in r.infos)
        reason = r.unavailable_reason
        if reason is not None and self.node not in reason:
            reason = f"{self.node}: {reason}"
        return Reading(infos, r.samples, reason, r.stats)

    def close(self) -> None:
        self.source.close()
