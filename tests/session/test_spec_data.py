"""A SessionSpec is plain data (issue 31): what to open, never an opened thing. The specs the builder makes for the
demo (its stand-in NVML, its exporters) and for a dashboard reading exporters hold no NVML handle, no GPU source,
no callable: the Session opens the GPUs from the spec's GpuPlan, owns what the caller hands it, and closes both."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from pathlib import Path, PurePath

import pytest
from msgspec import Struct
from msgspec.structs import replace

from symmtui.build import dashboard_spec, demo_spec, open_demo
from symmtui.demo.story import Demo
from symmtui.gpu.exporter import ExporterSource
from symmtui.judge.rules import RuleSet
from symmtui.session.core import Session
from symmtui.session.spec import GpuPlan
from tests.ui.kit import READY_LOG

PLAIN = (bool, int, float, str, bytes, PurePath, enum.Enum)


def _live(value: object, where: str) -> Iterator[str]:
    """Every part of ``value`` that is not plain data: ``where`` and its type."""
    if value is None or isinstance(value, (*PLAIN, RuleSet)):  # a rule table: compiled from the rules' data
        return
    if isinstance(value, tuple | list | frozenset | set):
        for i, item in enumerate(value):
            yield from _live(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _live(item, f"{where}[{key!r}]")
    elif isinstance(value, Struct):
        for name in value.__struct_fields__:
            yield from _live(getattr(value, name), f"{where}.{name}")
    else:
        yield f"{where}: {type(value).__name__}"


@pytest.mark.parametrize("nodes", [1, 2], ids=["demo", "demo-nodes"])
def test_the_demos_spec_is_data_and_its_session_owns_what_the_demo_made(nodes: int) -> None:
    spec, demo = demo_spec(80.0, nodes=nodes, record_bundle=False)
    assert list(_live(spec, "spec")) == []
    assert (spec.gpus is not None and spec.gpus.per_node) == (nodes == 2)  # the one-node demo's NVML: handed over
    session = open_demo(replace(spec, first_launch=None), demo)
    try:
        if isinstance(demo, Demo):
            assert session.nvml is not None and session.nvml is demo.nvml  # the stand-in the demo drives
        else:
            assert session.gpu_source is not None  # both nodes' exporters, opened by the Session from the plan
    finally:
        session.close()
    assert not demo.root.exists()  # the demo's clean-up ran with the Session's close


def test_a_dashboard_reading_exporters_opens_them_in_the_session(tmp_path: Path) -> None:
    cfg = tmp_path / "one.toml"
    cfg.write_text(f'[server]\nlog = "{READY_LOG}"\ngpus = "http://127.0.0.1:1/metrics"\n')
    spec = dashboard_spec(str(cfg), None, None, record_bundle=False)
    assert list(_live(spec, "spec")) == []
    assert spec.gpus == GpuPlan(nvml="always", sources=("http://127.0.0.1:1/metrics",))
    session = Session(spec)
    try:
        assert isinstance(session.gpu_source, ExporterSource)  # the exporter nobody answers: unavailable, not an error
    finally:
        session.close()

