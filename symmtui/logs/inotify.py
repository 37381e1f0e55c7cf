"""File-change watches for the follower: Linux inotify through libc (ctypes), else watchfiles.

On Linux the follower blocks in ``poll()`` on one inotify descriptor and a wake pipe (``DirWatch``), so an
idle follower costs nothing but a wake every ``STOP_CHECK`` seconds (it looks at its stop event), and a write
is seen at once. watchfiles' RustNotify looks at its stop event and its queue every ``step`` ms (5 ms: ~200
wakes a second while idle, and a write waited 5-10 ms for its step), so it serves where libc has no inotify
(macOS: FSEvents), with a 50 ms step (``RustWatch``). Events are not parsed: any event in a watched directory
means "poll the file"; the follower finds out what happened.

The last close of an inotify descriptor waits for the kernel's SRCU grace period (10-20 ms, in a process's
exit too): ``DirWatch.close`` leaves it to a thread, so it overlaps the verdict's printing and the bundle's
writing instead of adding to `wait`'s exit (bench.peers, "ready line -> wait exited").
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import struct
import threading
import time

__all__ = ["STOP_CHECK", "DirWatch", "RustWatch", "available", "open_watch"]

STOP_CHECK = 0.1
"""A blocked ``wait`` looks at its stop condition this often, for a caller that does not ``wake()``."""

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
# A directory: entries created, deleted, renamed, their attributes changed; itself deleted or moved. Not
# writes to its files (a busy /tmp would wake us for every other program's writes).
_DIR_MASK = 0x004 | 0x040 | 0x080 | 0x100 | 0x200 | 0x400 | 0x800
# A file: written, its attributes changed (permissions), closed after writing, deleted, moved.
_FILE_MASK = 0x002 | 0x004 | 0x008 | 0x400 | 0x800
_SELF = 0x400 | 0x800 | 0x4000 | 0x8000  # delete_self, move_self, queue overflow, watch removed
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name, NUL-padded)
_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_init1.restype = ctypes.c_int
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        lib.inotify_add_watch.restype = ctypes.c_int
        _libc = lib
    return _libc


def available() -> bool:
    """Whether this host has inotify (Linux)."""
    try:
        return hasattr(_lib(), "inotify_init1")
    except OSError:
        return False


class DirWatch:
    """inotify watches on some directories (entries come and go), some files (written) and a wake pipe;
    ``wait`` blocks until one has news.

    Raises OSError when inotify is unavailable or a directory cannot be watched (it vanished).
    """

    def __init__(self, dirs: list[str], names: frozenset[bytes] | None = None, files: tuple[str, ...] = ()) -> None:
        self.names = names  # only events about entries of these names wake ``wait`` (None: any event)
        lib = _lib()
        fd = lib.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, f"inotify_init1: {os.strerror(e)}")
        self.fd = fd
        self._lock = threading.Lock()  # wake() from another thread never writes to a closed (reused) fd
        self._r = self._w = -1
        try:
            self._r, self._w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            for path, mask in (*((d, _DIR_MASK) for d in dirs), *((f, _FILE_MASK) for f in files)):
                if lib.inotify_add_watch(fd, os.fsencode(path), mask) < 0:
                    e = ctypes.get_errno()
                    raise OSError(e, f"inotify_add_watch {path}: {os.strerror(e)}")
        except BaseException:
            self.close()
            raise
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self._poll.register(self._r, select.POLLIN)

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when an entry of ``names`` in a watched directory (or the
        directory itself) changed, or ``wake`` was called. Events about other entries (a busy /tmp) are
        read and dropped without returning."""
        deadline = time.monotonic() + timeout
        while True:
            ready = self._poll.poll(max(0, int((deadline - time.monotonic()) * 1000)))
            if not ready:
                return False
            woke = False
            for fd, _ in ready:
                data = b""
                with contextlib.suppress(BlockingIOError):
                    while chunk := os.read(fd, 65536):
                        data += chunk
                woke = woke or fd != self.fd or self._relevant(data)
            if woke:
                return True

    def _relevant(self, data: bytes) -> bool:
        if self.names is None:
            return True
        pos = 0
        while pos + _EVENT.size <= len(data):
            _wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
            name = data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0")
            pos += _EVENT.size + length
            if mask & _SELF or not length or name in self.names:  # (no name: the watched file itself)
                return True
        return False

    def wake(self) -> None:
        """Make a ``wait`` (now or next) return at once; safe from any thread, also after ``close``."""
        with self._lock:
            if self._w < 0:
                return
            try:
                os.write(self._w, b"\0")
            except BlockingIOError:  # the pipe is full of wakes already
                pass

    def close(self) -> None:
        """Close the watch. The inotify descriptor's last close waits for the kernel's SRCU grace period
        (10-20 ms): it is closed on a thread of its own, so the caller (a `wait` printing its verdict and
        writing its bundle) goes on meanwhile, and the process's exit does not wait for it again."""
        with self._lock:
            for fd in (self._r, self._w):
                if fd >= 0:
                    os.close(fd)
            if self.fd >= 0:
                threading.Thread(target=os.close, args=(self.fd,), name="inotify-close", daemon=True).start()
            self.fd = self._r = self._w = -1

    def __enter__(self) -> DirWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


RUST_STEP_MS = 50  # RustWatch looks at its queue and its wake this often (a write waits up to this long)


class RustWatch:
    """watchfiles' RustNotify on some directories behind ``DirWatch``'s interface, for a host whose libc has
    no inotify. Raises OSError when a directory cannot be watched."""

    def __init__(self, dirs: list[str], names: frozenset[bytes] | None = None, files: tuple[str, ...] = ()) -> None:
        try:
            from watchfiles._rust_notify import RustNotify  # here: a Linux follower never imports it
        except ImportError as exc:
            raise OSError(f"no inotify and no watchfiles: {exc}") from exc
        self._woken = threading.Event()
        try:
            self._notify = RustNotify(list(dirs), False, False, 300, False, True)
        except (OSError, RuntimeError) as exc:
            raise OSError(str(exc)) from exc

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when something changed in a watched directory, or ``wake``."""
        result = self._notify.watch(RUST_STEP_MS, RUST_STEP_MS, max(1, int(timeout * 1000)), self._woken)
        if self._woken.is_set():
            self._woken.clear()
            return True
        return result not in ("timeout", "stop")

    def wake(self) -> None:
        self._woken.set()

    def close(self) -> None:
        self._notify.close()


def open_watch(dirs: list[str], names: frozenset[bytes] | None = None,
               files: tuple[str, ...] = ()) -> DirWatch | RustWatch:
    """A watch on ``dirs`` (and, with inotify, ``files``): inotify where libc has it, else watchfiles."""
    if available():
        return DirWatch(dirs, names, files)
    return RustWatch(dirs, names, files)
