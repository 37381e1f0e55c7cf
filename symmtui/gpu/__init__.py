"""GPUs through NVML: one wrapper, a sampler, the topology matrix, and a pynvml stand-in."""

from __future__ import annotations
