"""watchfiles' inotify watcher (RustNotify) loaded without the watchfiles package's ``__init__``.

``import watchfiles`` also imports its ``watch``/``awatch``/``run_process`` helpers and with them anyio,
multiprocessing and logging (~9 ms of CPU); the follower uses only the extension module's class. It is
loaded from the package's folder under its own name and registered in ``sys.modules``, so a later
``import watchfiles`` (whose own modules say ``from ._rust_notify import ...``) reuses it: an extension
module is initialised once per process. The one difference: the package then has no ``_rust_notify``
attribute, so ``import watchfiles._rust_notify`` followed by attribute access would fail (nothing here
or in watchfiles does that; ``from watchfiles import _rust_notify`` works).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import threading
from typing import Any

NAME = "watchfiles._rust_notify"
_lock = threading.Lock()


def rust_notify() -> Any | None:
    """The ``RustNotify`` class, or None when watchfiles or its extension module is missing."""
    with _lock:
        module = sys.modules.get(NAME)
        if module is None:
            try:
                module = _load_alone()
            except ImportError:
                module = None
        if module is None:
            try:  # a watchfiles laid out differently: its own import (slower, same class)
                from watchfiles import _rust_notify as module
            except ImportError:
                return None
    notify: Any = getattr(module, "RustNotify", None)
    return notify


def _load_alone() -> Any | None:

    package = importlib.machinery.PathFinder.find_spec("watchfiles")
    if package is None or not package.submodule_search_locations:
        return None
    for folder in package.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_rust_notify" + suffix)
            if not os.path.isfile(path):
                continue
            spec = importlib.util.spec_from_file_location(NAME, path)
            if spec is None or spec.loader is None:
                return None
            module = importlib.util.module_from_spec(spec)
            sys.modules[NAME] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[NAME]
                raise
            return module
    return None
