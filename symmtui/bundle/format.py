"""The bundle file: its suffix, its limits, and reading one back (``Bundle``).

One gzip-compressed JSON document, ``*.symmtui-bundle.json.gz`` (mode 0600), written atomically; where
(the state dir's ``bundles/``) and under which name: ``symmtui.bundle.store``.
The keys and limits are documented in docs/bundle.md; :data:`VERSION` changes when they do.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

from msgspec import Struct

from symmtui import boundary
from symmtui.bundle import codec
from symmtui.errors import UserError
from symmtui.launch.envinfo import EnvInfo

FORMAT = "symmtui-bundle"
VERSION = 1
SUFFIX = ".symmtui-bundle.json.gz"

# Limits (what is kept is bounded whatever the bring-up does):
HEAD_BYTES = 1 << 20  # the log's first 1 MiB of text...
TAIL_BYTES = 3 << 20  # ...and its last 3 MiB; lines between are counted, not kept
MAX_LINE_CHARS = 4096  # one line's text past this is cut (marked)
MAX_EVENTS = 4000  # event updates kept (then counted)
MAX_SNAPSHOTS = 4000  # readiness snapshots kept, each only when the judgement changed
MAX_GPU_ROUNDS = 1800  # GPU sampling rounds kept: past it, every other is dropped and the stride doubles
MAX_NOTICES = 200
MAX_FILE_BYTES = 8 << 20  # the compressed file; a bigger one is rebuilt with less of the log
MAX_READ_BYTES = 64 << 20  # a bundle we read back (compressed) ...
MAX_JSON_BYTES = 64 << 20  # ... and uncompressed (the recorder writes none larger)


class BundleError(UserError):
    """A file that is not a bundle symmtui can read (exit 2)."""

    exit_code = 2


class Bundle(Struct, frozen=True):
    """A bundle read back: the JSON document and its environment; accessors for what report/replay read."""

    path: Path
    data: dict[str, Any]
    environment: EnvInfo | None

    @property
    def name(self) -> str:
        return str(self.data.get("name") or "")

    @property
    def lines(self) -> list[list[Any]]:
        """The kept log lines, ``[t, generation, line_no, offset, text]``, head then tail, in order."""
        log = self.data.get("log")
        if not isinstance(log, dict):  # read_bundle checked the lists only where they are
            return []
        return [*(log.get("head") or []), *(log.get("tail") or [])]

    @property
    def verdicts(self) -> list[dict[str, Any]]:
        return list(self.data.get("verdicts") or [])

    @property
    def final(self) -> dict[str, Any] | None:
        """The last verdict reached (None: the run ended before any)."""
        v = self.verdicts
        return v[-1] if v else None


def _list(data: dict[str, Any], *keys: str) -> None:
    for key in keys:
        node: Any = data
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None and not isinstance(node, list):
            raise ValueError(f"{key} is not a list")


def read_bundle(path: str | os.PathLike[str]) -> Bundle:
    """Read a bundle; BundleError (one line, what to do) for a file that is not one."""
    p = Path(path)
    raw = boundary.read_bytes(p, what="the bundle", max_bytes=MAX_READ_BYTES)
    try:
        text = codec.gunzip(raw, MAX_JSON_BYTES) if raw[:2] == b"\x1f\x8b" else raw
        if len(text) > MAX_JSON_BYTES:
            raise codec.TooLarge(f"over {MAX_JSON_BYTES >> 20} MiB uncompressed")
        data = json.loads(text)
        codec.check_depth(data)
    except codec.TooLarge as exc:
        raise BundleError(f"{p}: the bundle is {exc}; not read (symmtui writes none so large)") from None
    except (OSError, EOFError, zlib.error, ValueError, RecursionError) as exc:
        raise BundleError(f"{p} is not a symmtui bundle ({type(exc).__name__}); "
                          f"give a {SUFFIX} file written by symmtui") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleError(f"{p} is not a symmtui bundle (no \"format\": \"{FORMAT}\"); give a {SUFFIX} file")
    if data.get("version") != VERSION:
        raise BundleError(f"{p} is a bundle of format version {data.get('version')!r}; this symmtui reads "
                          f"version {VERSION}: use the symmtui that wrote it")
    try:
        _list(data, "log.head", "log.tail", "events", "snapshots", "verdicts", "notices", "gpu.rounds",
              "generations")
        env = EnvInfo.from_json(data["environment"]) if data.get("environment") is not None else None
    except ValueError as exc:
        raise BundleError(f"{p}: damaged bundle ({exc})") from None
    return Bundle(p, data, env)
