"""GPUs read from an exporter's URL: dcgm-exporter or nvitop-exporter text, or a Prometheus server's query API.

The exposition is parsed by prometheus_client's parser; the series are mapped to the same GpuInfo /
GpuSample records NVML gives. A metric the exporter does not publish is NA ("n/a"), never zero; what no
exporter can say (processes, capability, topology, PCIe link) is NA too.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx
from msgspec import Struct, field
from msgspec.structs import replace

from symmtui.bringup.httpget import failed
from symmtui.errors import UserError
from symmtui.gpu.results import MIB, NA, CallStats, GpuInfo, GpuSample, NAType
from symmtui.gpu.source import Reading
from symmtui.textsafe import outside, visible

MAX_BODY: Final = 16 * 1024 * 1024
"""An exposition larger than this is refused (dcgm-exporter on 8 GPUs is ~60 KiB, on MAX_GPUS ~8 MiB)."""
MAX_GPUS: Final = 1024
"""GPUs one source may publish (a node has 8-16; a Prometheus server over a cluster, a few hundred)."""
MAX_SAMPLES_PER_GPU: Final = 4
"""Samples of one metric per GPU before the page counts as too many GPUs (dcgm repeats a GPU per pod)."""
# The values a field can hold; outside (-1e308, 1e300) it is n/a with the reason. MiB, %, C, W, Xid.
PLAUSIBLE: Final[dict[str, tuple[float, float]]] = {
    "used": (0, 1 << 30), "free": (0, 1 << 30), "reserved": (0, 1 << 30), "total": (0, 1 << 30),
    "util": (0, 100), "mem_util": (0, 100), "temp": (-100, 500), "power": (0, 100_000),
    "power_limit": (0, 100_000), "xid": (0, 1 << 31),
}
DCGM_BLANK: Final = 0x7FFFFFF0
"""DCGM's "blank" sentinels (DCGM_INT32_BLANK and above, DCGM_FP64_BLANK) mean no value: NA."""
EXIT_UNREACHABLE: Final = 3
PROMETHEUS_PATH: Final = "/api/v1/query"

# Our field -> the series names that carry it, in MiB / % / C / W as each exporter publishes them.
DCGM: Final[dict[str, str]] = {
    "used": "DCGM_FI_DEV_FB_USED",
    "free": "DCGM_FI_DEV_FB_FREE",
    "reserved": "DCGM_FI_DEV_FB_RESERVED",
    "total": "DCGM_FI_DEV_FB_TOTAL",
    "util": "DCGM_FI_DEV_GPU_UTIL",
    "mem_util": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "temp": "DCGM_FI_DEV_GPU_TEMP",
    "power": "DCGM_FI_DEV_POWER_USAGE",
    "power_limit": "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "xid": "DCGM_FI_DEV_XID_ERRORS",
}
# nvitop-exporter's gauges carry a unit, which prometheus_client appends to the name (gpu_memory_used_MiB).
NVITOP: Final[dict[str, str]] = {
    "used": "gpu_memory_used_MiB",
    "free": "gpu_memory_free_MiB",
    "total": "gpu_memory_total_MiB",
    "util": "gpu_utilization_Percentage",
    "mem_util": "gpu_memory_utilization_Percentage",
    "temp": "gpu_temperature_C",
    "power": "gpu_power_usage_W",
    "power_limit": "gpu_power_limit_W",
}
NVITOP_INFO: Final = "nvitop_info"
_BY_NAME: Final[dict[str, tuple[str, str]]] = {
    **{name: ("dcgm-exporter", f) for f, name in DCGM.items()},
    **{name: ("nvitop-exporter", f) for f, name in NVITOP.items()},
}
WANTED: Final = frozenset(_BY_NAME) | {NVITOP_INFO}
NOT_PUBLISHED: Final = "not published by the exporter"


class ExporterError(UserError):
    """An exporter URL that cannot be read: one line saying what to do."""

    exit_code = EXIT_UNREACHABLE


class Series(Struct, frozen=True):
    """One sample of one metric: its name, labels and value."""

    name: str
    labels: Mapping[str, str]
    value: float


class _Gpu(Struct):
    """The values gathered for one GPU (or MIG instance) from the series that name it."""

    host: str
    key: str  # the exporter's GPU number ("0"), a MIG instance's "0/3", nvitop's "0:1"
    name: str | None = None
    uuid: str | None = None
    bus: str | None = None
    values: dict[str, float] = field(default_factory=dict)
    bad: dict[str, str] = field(default_factory=dict)  # field -> why its value is n/a


class Scrape(Struct, frozen=True):
    """What one read of an exporter gave: its GPUs, which exporter it is, the driver it names."""

    infos: tuple[GpuInfo, ...]
    samples: tuple[GpuSample, ...]
    kind: str  # "dcgm-exporter", "nvitop-exporter", or both joined by "+"
    driver: str | None
    hosts: tuple[str, ...]
    seconds: float


def check_source_url(url: str) -> str:
    """The URL to fetch (``/metrics`` added to a bare host:port); UserError for anything but http(s)://host."""
    parts = urlsplit(url.strip())
    hint = "give the exporter's metrics URL, e.g. http://node1:9400/metrics (dcgm-exporter)"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--source {visible(url)!r} is not an http(s) URL: {hint}")
    try:
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError as exc:
        raise UserError(f"--source {visible(url)!r}: {exc}: {hint}") from None
    if parts.path in ("", "/"):
        parts = parts._replace(path="/metrics")
    return urlunsplit(parts)


def is_prometheus(url: str) -> bool:
    """A Prometheus server's query API (``.../api/v1/query``), not an exporter's exposition."""
    return urlsplit(url).path.rstrip("/").endswith(PROMETHEUS_PATH)


def _families_wanted(text: str) -> str:
    """Only the lines of the families symmtui reads (their samples and # HELP / # TYPE lines), so the
    parser is not run over an exporter's host, process and NVLink series (most of nvitop-exporter's page).
    A line is one sample in this format (a newline inside a label value is escaped), so the cut is exact."""
    keep: list[str] = []
    counts: dict[str, int] = {}
    most = MAX_GPUS * MAX_SAMPLES_PER_GPU
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE") and parts[2] in WANTED:
                keep.append(line)
            continue
        cut = len(line)
        for sep in ("{", " "):
            i = line.find(sep)
            if 0 <= i < cut:
                cut = i
        name = line[:cut]
        if name in WANTED:
            counts[name] = counts.get(name, 0) + 1
            if counts[name] > most:
                raise TooManyGpus(f"{counts[name]}+ samples of {name}")
            keep.append(line)
    return "\n".join(keep) + "\n" if keep else ""


class TooManyGpus(ValueError):
    """A page with more GPUs than MAX_GPUS: refused before it is parsed."""


def parse_exposition(text: str) -> list[Series]:
    """The samples of the metrics symmtui reads, through prometheus_client's parser; ValueError if the
    text is not the Prometheus text format."""
    # prometheus_client's parser: an exporter source's first scrape
    from prometheus_client.parser import text_string_to_metric_families

    wanted = _families_wanted(text)
    out: list[Series] = []
    for family in text_string_to_metric_families(wanted or text):  # none of ours: the whole page must still parse
        for s in family.samples:
            if s.name in WANTED:
                out.append(Series(s.name, s.labels, float(s.value)))
    return out


def prometheus_query() -> str:
    """The one PromQL query that selects every series symmtui reads."""
    names = "|".join(sorted(WANTED))
    return '{__name__=~"' + names + '"}'


def parse_prometheus(doc: object) -> list[Series]:
    """The series of a Prometheus ``/api/v1/query`` answer (an instant vector); ValueError if it is not one."""
    if not isinstance(doc, dict):
        raise ValueError("the answer is not a JSON object")
    if doc.get("status") != "success":
        raise ValueError(f"Prometheus said {doc.get('errorType', 'error')}: {doc.get('error', doc.get('status'))}")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise ValueError("the answer is not an instant vector")
    if len(data["result"]) > MAX_GPUS * MAX_SAMPLES_PER_GPU * len(WANTED):
        raise TooManyGpus(f"{len(data['result'])} series")
    out: list[Series] = []
    for item in data["result"]:
        if not isinstance(item, dict):
            raise ValueError("a result that is not an object")
        metric, value = item.get("metric"), item.get("value")
        if not isinstance(metric, dict) or not isinstance(value, list) or len(value) != 2:
            raise ValueError("a result without metric and value")
        labels = {str(k): str(v) for k, v in metric.items() if k != "__name__"}
        out.append(Series(str(metric.get("__name__", "")), labels, float(value[1])))
    return out


def _host_of(labels: Mapping[str, str], fallback: str) -> str:
    for key in ("Hostname", "hostname"):
        if labels.get(key):
            return labels[key]
    instance = labels.get("instance")
    if instance:
        return urlsplit("//" + instance).hostname or instance
    return fallback


def _implausible(fld: str, v: float) -> str | None:
    """Why a published value is no value of this field (NaN: nvitop's N/A; DCGM's blank sentinels;
    -1e308 MiB, inf, 1e300 W), or None when it is one."""
    if math.isnan(v):
        return "the exporter has no value (NaN)"
    if DCGM_BLANK <= v < math.inf and v == int(v) and v < 2**63:
        return "the exporter has no value (DCGM's blank)"
    low, high = PLAUSIBLE[fld]
    if not low <= v <= high:
        return f"the exporter published {v:g}, not a possible value"
    return None


def gpus_from_series(series: Iterable[Series], *, fallback_host: str, now: float | None = None) -> Scrape:
    """GPU records from the series (dcgm-exporter and nvitop-exporter names); ``fallback_host`` names
    the node when no ``Hostname`` / ``hostname`` / ``instance`` label does. Indices number the GPUs
    in host, then exporter order; ``host_index`` keeps the exporter's own number."""
    gpus: dict[tuple[str, str], _Gpu] = {}
    kinds: set[str] = set()
    driver: str | None = None
    for s in series:
        if s.name == NVITOP_INFO:
            driver = outside(s.labels.get("driver_version") or "") or driver
            continue
        kind, fld = _BY_NAME[s.name]
        lab = {k: outside(v) for k, v in s.labels.items()}  # every label is outside text: one line, visible
        host = _host_of(lab, fallback_host)
        if kind == "dcgm-exporter":
            key = lab.get("gpu", "")
            if lab.get("GPU_I_ID"):
                key = f"{key}/{lab['GPU_I_ID']}"
            name = lab.get("modelName")
            if name and lab.get("GPU_I_PROFILE"):
                name = f"{name} MIG {lab['GPU_I_PROFILE']}"
            uuid = lab.get("UUID") or lab.get("uuid")
            bus = lab.get("pci_bus_id") or None
            driver = lab.get("DCGM_FI_DRIVER_VERSION") or driver
        else:
            key, name, uuid, bus = lab.get("index", ""), lab.get("devicename"), lab.get("uuid"), None
        kinds.add(kind)
        gpu = gpus.get((host, key))
        if gpu is None:
            if len(gpus) >= MAX_GPUS:
                raise TooManyGpus(f"more than {MAX_GPUS} GPUs")
            gpu = gpus[(host, key)] = _Gpu(host, key, name, uuid, bus)
        why = _implausible(fld, s.value)
        if why is not None:
            gpu.bad.setdefault(fld, why)
        else:
            gpu.values.setdefault(fld, s.value)  # the first series wins (dcgm repeats a GPU per pod label set)
    ordered = sorted(gpus.values(), key=lambda g: (g.host, _order(g.key)))
    wall = time.time() if now is None else now
    infos = tuple(_info(i, g) for i, g in enumerate(ordered))
    samples = tuple(_sample(i, g, wall) for i, g in enumerate(ordered))
    hosts = tuple(dict.fromkeys(g.host for g in ordered))
    return Scrape(infos, samples, "+".join(sorted(kinds)), driver, hosts, 0.0)


def _order(key: str) -> tuple[int, ...]:
    parts = key.replace(":", "/").split("/")
    return tuple(int(p) if p.isdigit() else 1 << 30 for p in parts)


def _mib(v: float | None) -> int | NAType:
    return NA if v is None else int(round(v * MIB))


def _int(v: float | None) -> int | NAType:
    return NA if v is None else int(round(v))


def _float(v: float | None) -> float | NAType:
    return NA if v is None else float(v)


def _missing(g: _Gpu, fields: Iterable[str]) -> tuple[tuple[str, str], ...]:
    return tuple((f, g.bad.get(f, NOT_PUBLISHED)) for f in fields if f not in g.values)


def _info(index: int, g: _Gpu) -> GpuInfo:
    v = g.values
    host_index = int(g.key) if g.key.isdigit() else None
    return GpuInfo(
        index=index, name=g.name or NA, uuid=g.uuid or NA, pci_bus_id=g.bus or NA,
        capability=NA, family=NA, sm=NA, memory_total=_total(v), pcie_max_gen=NA, pcie_max_width=NA,
        mig_mode=NA, power_limit_w=_float(v.get("power_limit")), persistence_mode=NA,
        errors=(("capability", "not published by exporters"),) + _missing(g, ("power_limit",)),
        host=g.host, host_index=host_index,
    )


def _total(v: Mapping[str, float]) -> int | NAType:
    """Total memory: the exporter's total, else used + free (+ reserved when published)."""
    if "total" in v:
        return _mib(v["total"])
    if "used" in v and "free" in v:
        return _mib(v["used"] + v["free"] + v.get("reserved", 0.0))
    return NA


def _sample(index: int, g: _Gpu, wall: float) -> GpuSample:
    v = g.values
    total = _total(v)
    used = _mib(v.get("used"))
    free = _mib(v.get("free"))
    reserved: int | NAType
    if "reserved" in v:
        reserved = _mib(v["reserved"])
    elif "total" in v and "used" in v and "free" in v:  # nvitop: total - used - free is the driver's share
        reserved = max(0, _mib(v["total"]) - _mib(v["used"]) - _mib(v["free"]))  # type: ignore[operator]
    else:
        reserved = NA
    return GpuSample(
        index=index, time=wall, memory_used=used, memory_reserved=reserved, memory_free=free,
        memory_total=total, utilization_gpu=_int(v.get("util")), utilization_memory=_int(v.get("mem_util")),
        temperature_c=_int(v.get("temp")), power_w=_float(v.get("power")), pcie_gen=NA, pcie_width=NA,
        processes=NA, last_xid=_int(v.get("xid")),
        errors=(("processes", "not published by exporters"),)
        + _missing(g, ("used", "free", "util", "mem_util", "temp", "power", "xid"))
        + ((("memory_total", g.bad["total"]),) if "total" in g.bad and isinstance(total, NAType) else ()),
    )


class ExporterSource:
    """One exporter URL (or Prometheus query API) as a GPU source, read over HTTP with ``timeout`` seconds
    for the whole answer. ``scrape()`` raises ExporterError; ``read()`` (the sampler's) never does."""

    def __init__(self, url: str, *, timeout: float = 2.0) -> None:
        self.url = check_source_url(url)
        self.prometheus = is_prometheus(self.url)
        self.timeout = float(timeout)
        self.host = urlsplit(self.url).hostname or self.url
        self.kind: str | None = None
        """"dcgm-exporter" / "nvitop-exporter" once read (None before)."""
        self.driver: str | None = None
        self.hosts: tuple[str, ...] = ()
        self.last_error: ExporterError | None = None
        """Why the last ``read()`` failed (None: it answered)."""
        self._lock = threading.Lock()
        self._last: Scrape | None = None

    @property
    def label(self) -> str:
        return self.url

    async def _fetch(self, url: str) -> bytes:
        """One GET, its body streamed up to MAX_BODY; no timeout of its own (``_get`` holds the deadline)."""
        shown = visible(self.url)
        # No proxy from the environment (a node's exporter is reached directly, as the probe does).
        async with httpx.AsyncClient(timeout=None, trust_env=False, follow_redirects=False) as client:
            headers = {"Accept": "text/plain;version=0.0.4, application/json"}
            async with client.stream("GET", url, headers=headers) as resp:
                if resp.status_code != 200:
                    raise ExporterError(f"--source {shown} answered HTTP {resp.status_code} {visible(resp.reason_phrase)}: "
                                        f"give the exporter's metrics URL (e.g. http://node1:9400/metrics) "
                                        f"or a Prometheus server's {PROMETHEUS_PATH}")
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_BODY:
                        raise ExporterError(f"--source {shown} sent more than {MAX_BODY // MIB} MiB: "
                                            f"that is no GPU exporter's page; check the URL")
                    chunks.append(chunk)
        return b"".join(chunks)

    def _get(self) -> str:
        """The page, within ``timeout`` seconds for the whole answer (connect, headers dribbled one byte a
        second, body): the request is cancelled at the deadline, which closes its connection."""
        url = self.url
        params = {"query": prometheus_query()} if self.prometheus else None
        if params:
            url = f"{url}?{urlencode(params)}"
        shown = visible(self.url)
        try:
            body = asyncio.run(asyncio.wait_for(self._fetch(url), self.timeout))
        except TimeoutError:
            raise ExporterError(f"--source {shown}: no answer within {self.timeout:g} s (for the whole page): "
                                f"is the exporter up and reachable from here?") from None
        except httpx.ConnectError as exc:
            raise ExporterError(f"--source {shown}: cannot connect ({_why(exc)}): is the exporter running there? "
                                f"(dcgm-exporter listens on :9400, nvitop-exporter on :8000 by default)") from None
        except httpx.HTTPError as exc:
            raise ExporterError(f"--source {shown}: {type(exc).__name__}: {_why(exc)}: check the URL and the exporter") from None
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise ExporterError(f"--source {shown} did not answer with text (not UTF-8): "
                                f"give dcgm-exporter's or nvitop-exporter's /metrics URL") from None

    def scrape(self) -> Scrape:
        """Fetch and parse once (blocking up to ``timeout``); ExporterError with what to do if it fails."""
        t0 = time.perf_counter()
        text = self._get()
        shown = visible(self.url)
        try:
            series = parse_prometheus(json.loads(text)) if self.prometheus else parse_exposition(text)
            scrape = gpus_from_series(series, fallback_host=self.host)
        except TooManyGpus as exc:
            raise ExporterError(f"--source {shown} publishes more than {MAX_GPUS} GPUs ({exc}): give one node's "
                                f"exporter, or a Prometheus server whose query selects fewer") from None
        except (ValueError, RecursionError) as exc:  # json.JSONDecodeError is one
            what = "a Prometheus query answer" if self.prometheus else "a Prometheus exposition"
            raise ExporterError(f"--source {shown} did not answer with {what} ({visible(str(exc))[:120]}): "
                                f"give dcgm-exporter's or nvitop-exporter's /metrics URL, "
                                f"or a Prometheus server's {PROMETHEUS_PATH}") from None
        if not scrape.infos:
            raise ExporterError(f"--source {shown} publishes no GPU metrics (no DCGM_FI_DEV_* or nvitop-exporter "
                                f"gpu_* series): point it at dcgm-exporter or nvitop-exporter")
        scrape = Scrape(scrape.infos, scrape.samples, scrape.kind, scrape.driver, scrape.hosts,
                        time.perf_counter() - t0)
        self.kind, self.driver, self.hosts = scrape.kind, scrape.driver, scrape.hosts
        self._last = scrape
        return scrape

    def read(self) -> Reading:
        """The sampler's round: a scrape, or the reason there is none (the last GPUs, marked lost)."""
        with self._lock:
            t0 = time.perf_counter()
            try:
                s = self.scrape()
            except ExporterError as exc:
                self.last_error = exc
                return self._lost(str(exc), time.perf_counter() - t0)
            self.last_error = None
            return Reading(s.infos, s.samples, None, CallStats(1, s.seconds, "GET " + self.url, s.seconds))

    def _lost(self, reason: str, seconds: float) -> Reading:
        stats = CallStats(1, seconds, "GET " + self.url, seconds, {"GET": 1})
        last = self._last
        if last is None:
            return Reading((), (), reason, stats)
        infos = tuple(_replace_lost(i, reason) for i in last.infos)
        wall = time.time()
        samples = tuple(GpuSample(index=s.index, time=wall, memory_used=NA, memory_reserved=NA, memory_free=NA,
                                  memory_total=s.memory_total, utilization_gpu=NA, utilization_memory=NA,
                                  temperature_c=NA, power_w=NA, pcie_gen=NA, pcie_width=NA, processes=NA,
                                  lost=True, errors=(("source", reason),)) for s in last.samples)
        return Reading(infos, samples, None, stats)

    def close(self) -> None:
        """Nothing held between reads (each read opens and closes its own connection)."""


def _replace_lost(info: GpuInfo, reason: str) -> GpuInfo:
    return replace(info, lost=True, errors=(("source", reason),))


def _why(exc: httpx.HTTPError) -> str:
    got = failed(exc, "")
    if got.kind == "refused":
        return "connection refused"
    if got.kind == "dns":
        return "unknown host"
    text = str(exc) or type(exc).__name__
    for known, said in (("No route to host", "no route to host"), ("Name or service not known", "unknown host")):
        if known in text:
            return said
    return visible(text)[:120]
