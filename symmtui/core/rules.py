"""The line rules: one table of data (ready, phase, progress, crash, warning) and a fast matcher over it."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from symmtui.core.decode import strip_ansi as strip_ansi  # the follower's ANSI rule, re-exported
from symmtui.errors import UserError

with warnings.catch_warnings():  # the public names of re's parser are deprecated aliases; still the stable API
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants
    import sre_parse


class Kind(StrEnum):
    """What a matching line means for the bring-up."""

    READY = "ready"
    CRASH = "crash"
    WARNING = "warning"
    PHASE = "phase"
    PROGRESS = "progress"
    INFO = "info"


@dataclass(frozen=True)
class Rule:
    """One line rule.

    ``pattern`` is a regex searched in the ANSI-stripped line. ``literals`` are plain substrings of
    which at least one is present in every line the pattern matches (the prefilter keys); empty means
    "derive one from the pattern" (user rules) or, failing that, "always try the regex".
    ``phase`` is the phase this line enters (PHASE/PROGRESS rules); ``ends`` the phase it closes.
    ``dialect`` marks lines only one server prints ("sglang"/"vllm"); ``unless_dialect`` (ready
    rules only) demotes the ready marker to a PHASE of ``phase`` when the log is of that dialect.
    """

    id: str
    kind: Kind
    pattern: str
    summary: str
    phase: str | None = None
    diagnosis: str | None = None
    literals: tuple[str, ...] = ()
    ends: str | None = None
    dialect: str | None = None
    unless_dialect: str | None = None
    user: bool = False


@dataclass(frozen=True)
class RuleMatch:
    """The first rule (in table order) that matched a line, with the regex match."""

    rule: Rule
    match: re.Match[str]

    def progress(self) -> tuple[int, int] | None:
        """``(i, n)`` for progress rules (named groups ``i`` and ``n``), else None."""
        groups = self.match.groupdict()
        i, n = groups.get("i"), groups.get("n")
        if i is None or n is None:
            return None
        return int(i), int(n)


# Phase names, in the order a server goes through them (the dashboard and history key on these).
PHASE_STARTING = "launching"
PHASE_INIT_DIST = "init distributed"
PHASE_LOADING = "loading weights"
PHASE_KV = "allocating KV cache"
PHASE_GRAPHS = "capturing CUDA graphs"
PHASE_HTTP = "starting HTTP server"
PHASE_WARMUP = "warm-up"
PHASE_READY = "ready"
PHASE_ORDER: tuple[str, ...] = (
    PHASE_STARTING,
    PHASE_INIT_DIST,
    PHASE_LOADING,
    PHASE_KV,
    PHASE_GRAPHS,
    PHASE_HTTP,
    PHASE_WARMUP,
    PHASE_READY,
)

_EXC = r"(?:^|[\s:])"  # an exception name starts a line or follows a separator

# Table order is priority: the first matching rule names the line. Specific crash shapes come before
# generic ones (no kernel image before CUDA error before RuntimeError).
BUILTIN_RULES: tuple[Rule, ...] = (
    # ---- ready markers
    Rule("sglang_ready", Kind.READY, r"The server is fired up and ready to roll", "server is fired up",
         phase=PHASE_READY, literals=("The server is fired up",), dialect="sglang"),
    # uvicorn prints this for SGLang too, BEFORE SGLang's warm-up request: ready only when the log
    # is not SGLang's (vLLM's readiness line); in an SGLang log it means "HTTP up, warming up".
    Rule("app_startup_complete", Kind.READY, r"Application startup complete\.", "application startup complete",
         phase=PHASE_WARMUP, literals=("Application startup complete",), unless_dialect="sglang"),
    # ---- crashes
    Rule("traceback", Kind.CRASH, r"Traceback \(most recent call last\):", "Python traceback",
         diagnosis="traceback", literals=("Traceback (most recent call last):",)),
    Rule("hit_exception", Kind.CRASH, r"\b\w+ hit an exception", "a subprocess hit an exception",
         diagnosis="traceback", literals=(" hit an exception",), dialect="sglang"),
    Rule("no_kernel_image", Kind.CRASH, r"no kernel image is available for execution", "CUDA: no kernel image",
         diagnosis="no_kernel_image", literals=("no kernel image is available for execution",)),
    Rule("cuda_oom", Kind.CRASH, r"OutOfMemoryError|CUDA out of memory|\bout of memory\b", "GPU out of memory",
         diagnosis="oom", literals=("OutOfMemoryError", "out of memory")),
    Rule("nccl_watchdog", Kind.CRASH,
         r"Watchdog caught collective operation timeout|ProcessGroupNCCL.*(?:timed out|Timeout)|NCCL.*watchdog.*time",
         "NCCL watchdog timeout", diagnosis="nccl_timeout", literals=("Watchdog caught collective operation timeout", "NCCL")),
    Rule("nccl_error", Kind.CRASH, r"NCCL error|nccl\w*Error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError",
         "NCCL error", diagnosis="nccl", literals=("NCCL error", "Error")),
    Rule("cuda_error", Kind.CRASH, r"CUDA error\b", "CUDA error", diagnosis="cuda_error", literals=("CUDA error",)),
    Rule("address_in_use", Kind.CRASH, r"[Aa]ddress already in use", "port already in use",
         diagnosis="address_in_use", literals=("ddress already in use",)),
    Rule("segfault", Kind.CRASH, r"Segmentation fault|SIGSEGV", "segmentation fault",
         diagnosis="segfault", literals=("Segmentation fault", "SIGSEGV")),
    Rule("fatal_python", Kind.CRASH, r"Fatal Python error", "fatal Python error",
         diagnosis="segfault", literals=("Fatal Python error",)),
    Rule("core_dumped", Kind.CRASH, r"core dumped", "core dumped", diagnosis="segfault", literals=("core dumped",)),
    Rule("killed", Kind.CRASH, r"(?:^|\s)Killed(?:\s|$)", "process killed", diagnosis="killed", literals=("Killed",)),
    Rule("sigquit", Kind.CRASH, r"Received sigquit from a child process", "a child process failed",
         diagnosis="sigquit", literals=("Received sigquit from a child process",), dialect="sglang"),
    Rule("key_error", Kind.CRASH, _EXC + r"KeyError: ", "KeyError", diagnosis="key_error", literals=("KeyError: ",)),
    Rule("runtime_error", Kind.CRASH, _EXC + r"(?:torch\.\w+\.)?RuntimeError: ", "RuntimeError",
         diagnosis="runtime_error", literals=("RuntimeError: ",)),
    # ---- warnings worth surfacing
    Rule("capability_unsupported", Kind.WARNING, r"Device capability (?P<cap>\d+) not supported",
         "device capability not supported", diagnosis="capability_unsupported", literals=("Device capability ",)),
    Rule("multicast_unsupported", Kind.WARNING, r"multicast operations are not supported",
         "multicast not supported", diagnosis="multicast_unsupported", literals=("multicast operations are not supported",)),
    # ---- phases and progress (SGLang, then vLLM shapes)
    Rule("server_args", Kind.PHASE, r"server_args=ServerArgs\(", "server arguments parsed",
         phase=PHASE_STARTING, literals=("server_args=ServerArgs(",), dialect="sglang"),
    Rule("vllm_start", Kind.PHASE, r"vLLM API server version|Starting vLLM API server", "vLLM API server starting",
         phase=PHASE_STARTING, literals=("vLLM API server version", "Starting vLLM API server"), dialect="vllm"),
    Rule("init_dist_begin", Kind.PHASE, r"Init torch distributed begin", "init torch distributed",
         phase=PHASE_INIT_DIST, literals=("Init torch distributed begin",), dialect="sglang"),
    Rule("init_dist_end", Kind.PHASE, r"Init torch distributed ends", "torch distributed ready",
         ends=PHASE_INIT_DIST, literals=("Init torch distributed ends",), dialect="sglang"),
    Rule("load_weight_begin", Kind.PHASE, r"Load weight begin", "loading weights",
         phase=PHASE_LOADING, literals=("Load weight begin",), dialect="sglang"),
    Rule("load_weight_end", Kind.PHASE, r"Load weight end", "weights loaded",
         phase=PHASE_KV, ends=PHASE_LOADING, literals=("Load weight end",), dialect="sglang"),
    Rule("vllm_load_begin", Kind.PHASE, r"Starting to load model", "loading weights",
         phase=PHASE_LOADING, literals=("Starting to load model",), dialect="vllm"),
    Rule("vllm_load_end", Kind.PHASE, r"Model loading took|Loading weights took", "weights loaded",
         phase=PHASE_KV, ends=PHASE_LOADING, literals=("Model loading took", "Loading weights took"), dialect="vllm"),
    Rule("shards_progress", Kind.PROGRESS,
         r"Loading (?:safetensors|pt) checkpoint shards:.*?\|\s*(?P<i>\d+)/(?P<n>\d+)\b",
         "checkpoint shards", phase=PHASE_LOADING, literals=("checkpoint shards:",)),
    Rule("kv_cache", Kind.PHASE, r"KV Cache is allocated|GPU KV cache size|# GPU blocks", "KV cache allocated",
         phase=PHASE_KV, literals=("KV Cache is allocated", "GPU KV cache size", "# GPU blocks")),
    Rule("memory_pool_end", Kind.PHASE, r"Memory pool end", "memory pool ready",
         ends=PHASE_KV, literals=("Memory pool end",), dialect="sglang"),
    Rule("cuda_graph_begin", Kind.PHASE, r"Capture cuda graph begin", "capturing CUDA graphs",
         phase=PHASE_GRAPHS, literals=("Capture cuda graph begin",), dialect="sglang"),
    Rule("cuda_graph_end", Kind.PHASE, r"Capture cuda graph end|Graph capturing finished", "CUDA graphs captured",
         ends=PHASE_GRAPHS, literals=("Capture cuda graph end", "Graph capturing finished")),
    Rule("cuda_graph_progress", Kind.PROGRESS,
         r"Captur(?:ing batches|ing CUDA graph\w*)\b.*?\|\s*(?P<i>\d+)/(?P<n>\d+)\b",
         "CUDA graph batches", phase=PHASE_GRAPHS, literals=("Capturing batches", "Capturing CUDA graph")),
    Rule("uvicorn_started", Kind.PHASE, r"Started server process", "HTTP server starting",
         phase=PHASE_HTTP, literals=("Started server process",)),
    Rule("uvicorn_running", Kind.PHASE, r"Uvicorn running on", "HTTP server up, warm-up request",
         phase=PHASE_WARMUP, literals=("Uvicorn running on",)),
)

def required_literal(pattern: str) -> str | None:
    """The longest plain substring every match of ``pattern`` must contain, or None if none is certain."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    return _longest_literal_run(list(parsed.data))


def _longest_literal_run(items: list[tuple[object, object]]) -> str | None:
    best = ""
    run: list[str] = []
    lit = sre_constants.LITERAL
    subpattern = sre_constants.SUBPATTERN
    for op, arg in items:
        if op is lit and isinstance(arg, int):
            run.append(chr(arg))
            continue
        cand = "".join(run)
        if len(cand) > len(best):
            best = cand
        run = []
        if op is subpattern and isinstance(arg, tuple):
            # (group, add_flags, del_flags, pattern): a plain group is required as a whole
            if arg[1] == 0 and arg[2] == 0:
                inner = _longest_literal_run(list(getattr(arg[3], "data", ())))
                if inner and len(inner) > len(best):
                    best = inner
    cand = "".join(run)
    if len(cand) > len(best):
        best = cand
    return best if len(best) >= 3 else None


class RuleSet:
    """An ordered rule table with a literal prefilter: most lines are rejected by a few substring tests."""

    def __init__(self, rules: Iterable[Rule] = BUILTIN_RULES) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._compiled: list[tuple[Rule, re.Pattern[str], tuple[str, ...]]] = []
        lits: set[str] = set()
        unanchored: list[tuple[Rule, re.Pattern[str]]] = []
        for rule in self.rules:
            rx = re.compile(rule.pattern)
            keys = rule.literals
            if not keys:
                derived = required_literal(rule.pattern) if not (rx.flags & re.IGNORECASE) else None
                keys = (derived,) if derived else ()
            if not keys:
                unanchored.append((rule, rx))
            self._compiled.append((rule, rx, keys))
            lits.update(keys)
        self.unanchored: tuple[tuple[Rule, re.Pattern[str]], ...] = tuple(unanchored)
        # Longest first: no literal is tested twice for the same line.
        self.literals: tuple[str, ...] = tuple(sorted(lits, key=lambda s: (-len(s), s)))
        self._prefilter = re.compile("|".join(re.escape(x) for x in self.literals)) if self.literals else None
        self._unanchored_rx = tuple(rx for _, rx in unanchored)

    def with_user(self, ready: Sequence[str] = (), crash: Sequence[str] = ()) -> RuleSet:
        """A new set with the user's ready/crash regexes first (they win over built-ins).

        A pattern that does not compile raises UserError naming the pattern and the regex error.
        """
        extra: list[Rule] = []
        for kind, pats in ((Kind.READY, ready), (Kind.CRASH, crash)):
            already = sum(1 for r in self.rules if r.user and r.kind is kind)
            for n, pat in enumerate(pats, already + 1):
                try:
                    rx = re.compile(pat)
                except re.error as exc:
                    raise UserError(
                        f"bad {kind.value} pattern {pat!r}: {exc} (write a Python regular expression; "
                        f"escape literal characters such as ( [ . with a backslash)"
                    ) from None
                if rx.search("") is not None:
                    raise UserError(f"{kind.value} pattern {pat!r} matches every line (an empty match): make it specific")
                extra.append(
                    Rule(f"user_{kind.value}_{n}", kind, pat, f"user {kind.value} pattern {pat!r}",
                         phase=PHASE_READY if kind is Kind.READY else None,
                         diagnosis="user_crash" if kind is Kind.CRASH else None, user=True)
                )
        return RuleSet((*extra, *self.rules))

    def candidate(self, plain: str) -> bool:
        """Whether any rule could match (the prefilter)."""
        if self._prefilter is not None and self._prefilter.search(plain) is not None:
            return True
        return any(rx.search(plain) is not None for rx in self._unanchored_rx)

    def match(self, plain: str) -> RuleMatch | None:
        """The first rule (table order) whose pattern matches ``plain``, or None."""
        return next(self._matches(plain), None) if self.candidate(plain) else None

    def match_all(self, plain: str) -> list[RuleMatch]:
        """Every rule that matches ``plain``, in table order."""
        return list(self._matches(plain)) if self.candidate(plain) else []

    def _matches(self, plain: str) -> Iterator[RuleMatch]:
        for rule, rx, keys in self._compiled:
            if keys and not any(k in plain for k in keys):
                continue
            m = rx.search(plain)
            if m is not None:
                yield RuleMatch(rule, m)


@dataclass
class ByteScanner:
    """Finds candidate lines in a big bytes buffer fast (``scan``): rare-byte anchors + memchr.

    For each literal it picks the byte that is rarest in a sample of the file; memchr (bytes.find
    of one byte) runs at many GB/s, and only at anchor hits is the literal compared. Literals whose
    rarest byte is still common fall back to ``bytes.find`` of the whole literal. Rules with no
    literal are searched with their regex over the whole buffer.
    """

    ruleset: RuleSet
    sample: bytes = b""
    anchors: dict[int, list[tuple[bytes, int]]] = field(default_factory=dict)
    whole: list[bytes] = field(default_factory=list)
    regexes: list[re.Pattern[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tune(self.sample)

    def tune(self, sample: bytes) -> None:
        """Choose, per literal, memchr on its rarest byte or bytes.find of the literal, by estimated cost.

        Costs in ns per haystack byte, calibrated on CPython 3.11: an anchor hit costs ~250 ns of
        Python; bytes.find of a needle of 6+ bytes (the two-way search) runs at ~0.32 GB/s times the
        needle's average shift, estimated from the sample's byte classes (the search table is
        indexed by ``byte & 63``).
        """
        self.anchors = {}
        self.whole = []
        size = max(len(sample), 1)
        counts = [sample.count(bytes((b,))) for b in range(256)] if sample else [0] * 256
        classes = [0.0] * 64
        for b in range(256):
            classes[b & 63] += counts[b] / size
        chosen_whole: list[bytes] = []
        for lit in self.ruleset.literals:
            data = lit.encode("utf-8")
            best_i = min(range(len(data)), key=lambda i: counts[data[i]])
            anchor_cost = 0.05 + counts[data[best_i]] / size * 250.0
            whole_cost = _find_cost(data, classes) if len(data) >= 6 else 1.0
            if anchor_cost <= whole_cost:
                self.anchors.setdefault(data[best_i], []).append((data, best_i))
            else:
                chosen_whole.append(data)
        self.whole = _merge_needles(chosen_whole)
        self.regexes = [re.compile(rx.pattern, rx.flags | re.MULTILINE) for _, rx in self.ruleset.unanchored]

    def candidate_starts(self, buf: bytes, end: int) -> list[int]:
        """Sorted start offsets of lines in ``buf[:end]`` that contain some literal (or match a free regex)."""
        starts: set[int] = set()
        find = buf.find
        rfind = buf.rfind
        for byte, lits in self.anchors.items():
            needle = bytes((byte,))
            i = find(needle, 0, end)
            while i != -1:
                for data, off in lits:
                    s = i - off
                    if s >= 0 and buf.startswith(data, s) and s + len(data) <= end:
                        starts.add(rfind(b"\n", 0, s) + 1)
                        break
                i = find(needle, i + 1, end)
        for data in self.whole:
            i = find(data, 0, end)
            while i != -1:
                ls = rfind(b"\n", 0, i) + 1
                starts.add(ls)
                nl = find(b"\n", i, end)
                if nl == -1:
                    break
                i = find(data, nl + 1, end)
        if self.regexes:
            starts.update(self._regex_starts(buf, end))
        return sorted(starts)

    def _regex_starts(self, buf: bytes, end: int) -> set[int]:
        """Line starts where a literal-free rule matches (decoded text: same newlines as the bytes)."""
        text = buf[:end].decode("utf-8", "replace")
        idx: set[int] = set()
        for rx in self.regexes:
            line, pos = 0, 0
            for m in rx.finditer(text):
                line += text.count("\n", pos, m.start())
                pos = m.start()
                idx.add(line)
        out: set[int] = set()
        line, off = 0, 0
        for want in sorted(idx):
            while line < want:
                off = buf.find(b"\n", off, end) + 1
                line += 1
            out.add(off)
        return out


def _find_cost(needle: bytes, classes: list[float]) -> float:
    """Estimated ns per haystack byte of ``bytes.find(needle)`` (two-way search, 64 byte classes)."""
    m = len(needle)
    shift = dict.fromkeys(range(64), m)
    for i, c in enumerate(needle):
        shift[c & 63] = m - 1 - i
    avg = sum(classes[c] * shift[c] for c in range(64)) or float(m)
    return 1.0 / (0.32 * max(avg, 0.5))


def _merge_needles(needles: list[bytes], min_common: int = 14) -> list[bytes]:
    """Needles that share a long common piece are searched once, by that piece."""
    out: list[bytes] = []
    for n in sorted(set(needles), key=len, reverse=True):
        for i, o in enumerate(out):
            common = _longest_common(n, o)
            if len(common) >= min_common:
                out[i] = common
                break
        else:
            out.append(n)
    return out


def _longest_common(a: bytes, b: bytes) -> bytes:
    best = b""
    for i in range(len(a)):
        for j in range(i + len(best) + 1, len(a) + 1):
            if a[i:j] in b:
                best = a[i:j]
            else:
                break
    return best
