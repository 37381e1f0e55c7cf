"""The CLI boundary: user-supplied paths, numbers, strings, files and directories are checked here first.

Every check fails with an :class:`InputError`, printed by the CLI as one ``symmtui: error: ...`` line
(exit 2) that says what to do. Nothing here starts work: a path is stat'ed before it is opened, a
file is opened non-blocking and read up to a cap, numbers are range-checked, strings length-capped.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import errno
import gc
import math
import os
import re
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from symmtui import __version__, clitext, paths
from symmtui.errors import InputError as InputError  # re-exported: the verbs' one import for input errors
from symmtui.errors import UserError
from symmtui.paths import usable_dir as usable_dir
from symmtui.textsafe import MAX_SHOWN as MAX_SHOWN
from symmtui.textsafe import shown as shown

# Loaded before stop_on_signals puts the handlers in: msgspec's C module init imports Python modules and
# clears their errors, so a Terminated raised inside it was lost and the verb went on, deaf to SIGTERM.
# That init also tries typing_extensions (and with it inspect, ast, dis, tokenize: ~10 ms of every verb's
# start) only to prefer its get_type_hints, used by typed decoding, which symmtui never asks for; it falls
# back to typing's. So typing_extensions is kept out of that one import and is importable again after it
# (Textual imports it); a process that has it loaded already is left as it is.
_TYPING_EXTENSIONS_ABSENT = "typing_extensions" not in sys.modules
if _TYPING_EXTENSIONS_ABSENT:
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # (import raises ImportError)
try:
    import msgspec  # noqa: F401
finally:
    if _TYPING_EXTENSIONS_ABSENT:
        del sys.modules["typing_extensions"]

MAX_VALUE_CHARS = 4096  # one option value (a path, URL, regex, name)
MAX_CONFIG_BYTES = 1 << 20  # a profile or a theme file
MAX_COMMAND_CHARS = 128 << 10  # a profile's command (Linux caps one argument at 128 KiB)
MAX_SECONDS = 30 * 86400.0  # any time option: 30 days (0 where allowed means "no limit")
PID_LIMIT = 4194304  # Linux's largest possible pid (PID_MAX_LIMIT); namespaces make pid_max unreliable
DEBUG_ENV = "SYMMTUI_DEBUG"  # set: an internal error shows its traceback instead of one line


# ---------------------------------------------------------------- the command line itself


_QUOTED = re.compile("'([^']{" + str(MAX_SHOWN + 1) + ",})'")


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean wait?)`` for a near miss among ``choices``, else ``""``."""
    import difflib  # here: difflib (~2 ms) only for a near miss's message

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one ``symmtui: error: ...`` line (exit 2), not usage + message.

    The line names what is wrong as the user typed it: an unknown option names itself (``symmtui --lgo foo``:
    ``--lgo``, not the value argparse then took for a verb), a near miss gets "did you mean", and the help
    it points to is the verb's own (``symmtui wait --lgo``: ``symmtui wait --help``).
    """

    _argv: list[str] | None = None

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            first = extras[0]
            argv = self._argv or []
            verb_name = getattr(ns, "verb", None)
            before_verb = verb_name in argv and first in argv and argv.index(first) < argv.index(verb_name)
            verb = None if before_verb else self._verb_parser(verb_name)
            where = verb if verb is not None else self
            if first.startswith("-") and first != "-":
                name = first.split("=", 1)[0]
                what = f"unknown option {shown(name)}"
                hint = _did_you_mean(name, where._option_string_actions)
            else:
                what, hint = f"unexpected argument {shown(first)}", ""
            where.error(f"{what}{'' if verb is None else f' for `{where.prog}`'}{hint}")
        return ns

    def _verb_parser(self, verb: object) -> Parser | None:
        """The sub-parser of ``verb`` (None: no verb, the dashboard's options)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and isinstance(verb, str):
                found = action.choices.get(verb)
                return found if isinstance(found, Parser) else None
        return None

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if isinstance(action, argparse._SubParsersAction) and value not in (action.choices or {}):
            # `symmtui --lgo foo`: the unknown option was skipped and its value taken for a verb; name the option
            for token in self._argv or ():
                if token == value:
                    break
                name = token.split("=", 1)[0]
                if token.startswith("--") and name not in self._option_string_actions:
                    raise argparse.ArgumentError(
                        None, f"unknown option {shown(name)}" + _did_you_mean(name, self._option_string_actions))
            verbs = list(action.choices or {})
            hint = _did_you_mean(str(value), verbs) or f" (the verbs: {', '.join(verbs)})"
            raise argparse.ArgumentError(None, f"unknown verb {shown(str(value))}{hint}")
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        # argparse quotes the offending value (an invalid choice): a long one is cut, not echoed
        message = _QUOTED.sub(lambda m: shown(m.group(1)), message)
        raise InputError(f"{message}; see `{self.prog} --help`")


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP to a headless verb: it unwinds as Ctrl-C does (what it started, a log command
    with its helpers, is stopped on the way out) and exits 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupted_code(exc: KeyboardInterrupt) -> int:
    """The exit code of a verb ended by Ctrl-C (130) or by :class:`Terminated` (143 for SIGTERM, 129 SIGHUP)."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)


_SIGNALS = {"installed": 0, "held": 0, "pending": 0, "terminating": 0, "app": 0}  # this process's (main thread)


def _terminated(signum: int, frame: FrameType | None) -> None:
    if _SIGNALS["held"]:
        _SIGNALS["pending"] = signum  # a cleanup runs: it ends first (signals_held), then this one acts
        return
    if _SIGNALS["terminating"]:
        return  # already ending on one: a second must not cut the clean-up it runs (SIGKILL forces)
    _SIGNALS["terminating"] = 1
    raise Terminated(signum)


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP end a verb as Ctrl-C does; they used to kill it at once, and a
    ``timeout 60 symmtui wait --log-cmd 'docker logs -f ...'`` left its log command running for ever.
    A signal the parent made ignored (``nohup``) stays ignored. Called by the `symmtui` command only
    (tests call :func:`symmtui.cli.main` in their own process). A Textual app takes them over while it
    runs (the dashboard's own exit on SIGTERM, its clean-up on SIGHUP)."""
    _SIGNALS["installed"] = 1
    if sys.unraisablehook is not _unraisable:
        _UNRAISABLE[:] = [sys.unraisablehook]
        sys.unraisablehook = _unraisable
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _terminated)


_UNRAISABLE: list[Callable[[Any], object]] = []  # the hook stop_on_signals replaced


def _unraisable(info: Any) -> None:
    """A Terminated raised where Python drops exceptions (a weakref callback, a ``__del__``, a generator being
    closed) is delivered again, at the main thread's next step: one landed in importlib's module-lock callback
    ("Exception ignored in ... cb") and `wait` ran on, deaf to SIGTERM (1 start in 300 under load)."""
    exc = info.exc_value
    if isinstance(exc, Terminated):
        _SIGNALS["terminating"] = 0  # it never unwound anything: the next delivery raises it
        # sent again from a bare thread (threading's start waits, and raised in this hook it is dropped again)
        main = threading.main_thread().ident
        if main is not None:  # (always: a running thread has one)
            _thread.start_new_thread(signal.pthread_kill, (main, exc.signum))
        return
    (_UNRAISABLE[0] if _UNRAISABLE else sys.__unraisablehook__)(info)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """A clean-up (``Session.close``) or a start-up that SIGTERM or SIGHUP cannot cut half-way: one arriving
    inside acts when it ends (unless the process is already ending on one). Where the `symmtui` command
    handles them and a Textual app, stopping, left them at their default, they are taken back first."""
    main = threading.current_thread() is threading.main_thread()
    if main and _SIGNALS["installed"]:
        stop_on_signals()
    _SIGNALS["held"] += 1
    try:
        yield
    finally:
        _SIGNALS["held"] -= 1
        if not _SIGNALS["held"] and _SIGNALS["pending"]:
            pending, _SIGNALS["pending"] = _SIGNALS["pending"], 0
            if not _SIGNALS["terminating"]:
                signal.raise_signal(pending)  # handled now, in the main thread: Terminated from there


def hold_signals() -> None:
    """From now on SIGTERM and SIGHUP only wait: the process is ending (a Textual app has stopped and given them
    back at their default, which would kill it half-way through its clean-up). The `symmtui` command only."""
    if _SIGNALS["installed"] and threading.current_thread() is threading.main_thread():
        _SIGNALS["held"] += 1
        stop_on_signals()


def hold_for_app() -> None:
    """A Textual app starts: SIGTERM and SIGHUP wait until it has its own handlers (``app_has_signals``). One that
    came inside Textual's start was raised wherever the main thread was (Terminated): a tab hung up while its demo
    dashboard started, under load, left a dashboard that printed its clean-up note and then never exited, 1 run in
    a few hundred (tests/ui/test_servetab.py). The `symmtui` command only."""
    if _SIGNALS["installed"] and not _SIGNALS["app"] and threading.current_thread() is threading.main_thread():
        _SIGNALS["app"] = 1
        _SIGNALS["held"] += 1


def app_has_signals() -> int:
    """The app's own handlers are in, or it ended before they were: the hold of ``hold_for_app`` ends. Returns the
    signal that came meanwhile (0: none) for the caller to act on, once no other hold is on."""
    if not _SIGNALS["app"]:
        return 0
    _SIGNALS["app"] = 0
    _SIGNALS["held"] -= 1
    if _SIGNALS["held"]:
        return 0  # another hold (a clean-up) is on: the signal acts when that ends
    pending, _SIGNALS["pending"] = _SIGNALS["pending"], 0
    return pending


CRASHES_KEPT = 20  # crash files kept in the state dir (the oldest go)
_WHOLE_PROCESS = [False]  # set by the command line (`console`): symmtui owns this process


def own_process() -> None:
    """Say that symmtui's command line owns this process (not a test calling ``cli.main`` in-process)."""
    _WHOLE_PROCESS[0] = True


def owns_process() -> bool:
    """Whether symmtui's command line owns this process: process-wide settings (the collector's) are its to make."""
    return _WHOLE_PROCESS[0]


_FIRST_FRAME = threading.Event()  # clear only while a dashboard's start waits for its first frame
_FIRST_FRAME.set()
FIRST_FRAME_WAIT = 2.0  # seconds at most that deferred work waits for that frame


def hold_for_first_frame() -> None:
    """A Textual front end starts (``cli``, a framed verb): what ``after_first_frame`` guards waits for its frame."""
    _FIRST_FRAME.clear()


def after_first_frame() -> None:
    """Return once the dashboard's first frame is drawn (or none is coming: at once; FIRST_FRAME_WAIT at most).
    A thread whose work the first frame does not show (the bundle's, the count of an attach's skipped lines)
    calls it first: each took the GIL from the start-up (a new thread waited up to 40 ms for it to be handed
    back), and the frame came later by as much."""
    _FIRST_FRAME.wait(FIRST_FRAME_WAIT)


def release_held() -> None:
    """What ``after_first_frame`` holds goes ahead now (the first frame, or a close that cannot wait for it)."""
    _FIRST_FRAME.set()


_KEY_SHOWN = threading.Event()  # clear from a key typed in a dashboard until the frame that shows it
_KEY_SHOWN.set()
KEY_WAIT = 0.1  # seconds at most that the engine's reading and judging waits for that frame


def key_typed() -> None:
    """A key reached a Textual front end: what calls ``give_way`` waits until its frame is drawn (``key_shown``)."""
    _KEY_SHOWN.clear()


def key_shown() -> None:
    """The frame that shows the last key typed is drawn: the engine reads on."""
    _KEY_SHOWN.set()


def give_way() -> None:
    """Between two steps of the engine's reading and judging: wait while a typed key's frame is drawn (KEY_WAIT at
    most). A 50k lines/s flood kept the judging thread on the GIL; the UI thread, given it back 5 ms at a time,
    drew a key's frame 60-110 ms after the key (bench.peers keys)."""
    _KEY_SHOWN.wait(KEY_WAIT)


def started() -> None:
    """The dashboard's first frame is drawn (or its app ended without one): what start-up made (modules, the
    Session, the widgets) is moved out of the collector's sight, collection, off since ``cli.console`` began,
    resumes, and the work held for the frame goes ahead."""
    release_held()
    if _WHOLE_PROCESS[0]:
        gc.freeze()
        gc.enable()


_INTERNAL: list[tuple[str, str]] = []  # this run's internal errors: (what, where the details went)
_ENDERS: list[Callable[[], object]] = []  # how the running front end ends on one (the dashboard's exit)


def crash_report(what: str, details: str) -> str:
    """Write an internal error's details (the traceback) to ``$XDG_STATE_HOME/symmtui/crashes/`` (0600); the words
    that say where they went, or how to see them when no file could be written."""
    from symmtui.redact import redact_argv  # here: a crash report only (every start imports boundary)

    head = (f"symmtui {__version__}, Python {sys.version.split()[0]}, pid {os.getpid()}\n"
            f"command: {' '.join(redact_argv(sys.argv))}\nerror: {what}\n\n")
    try:
        folder = paths.user_state_dir("crashes")  # the user's own, also inside the demo (its temp dir goes)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(100):
            path = folder / f"crash-{stamp}-{os.getpid()}{f'-{n}' if n else ''}.txt"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(17, "File exists")
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
            fh.write(head + details)
        for old in sorted(folder.glob("crash-*.txt"), key=lambda f: f.stat().st_mtime)[:-CRASHES_KEPT]:
            with contextlib.suppress(OSError):
                old.unlink()
    except (OSError, UserError):
        return f"rerun with {DEBUG_ENV}=1 for the traceback"
    return f"the details are in {path}"


def internal_error(what: str, details: str) -> None:
    """Record an internal error (a bug) seen outside the verb's own call (a worker thread, a Textual app): its
    details go to a crash file now, the verb ends with its one line and exit 2 (``run_checked``)."""
    _INTERNAL.append((what, crash_report(what, details)))


def ended_by_internal_error() -> None:
    """A worker thread's bug: recorded, then the verb is ended (the front end's ender: the dashboard exits; a
    headless verb of the `symmtui` command is interrupted in its main thread, as by Ctrl-C)."""
    if _ENDERS:
        _ENDERS[-1]()
        return
    if not _SIGNALS["installed"]:
        return  # a caller of cli.main in its own process (a test): the verb ends by itself, then exit 2
    # a real signal to the main thread (it may sleep in a syscall), to a handler that raises there; run_checked
    # then sees the recorded error and exits 2
    for sig, handler in ((signal.SIGTERM, _terminated), (signal.SIGINT, signal.default_int_handler)):
        if signal.getsignal(sig) is handler:
            main = threading.main_thread().ident
            if main is not None:
                signal.pthread_kill(main, sig)
            return


@contextlib.contextmanager
def ending_on_internal_errors(ender: Callable[[], object]) -> Iterator[None]:
    """While inside, a worker thread's internal error calls ``ender`` (thread-safe: it posts, never waits)."""
    _ENDERS.append(ender)
    try:
        yield
    finally:
        _ENDERS.remove(ender)


def _internal_line(what: str, where: str) -> str:
    return f"internal error ({what}); this is a bug: {where}; please report it"


def run_checked(body: Callable[[], int]) -> int:
    """Run a verb: a UserError is its one line and exit code; Ctrl-C is 130 (SIGTERM 143); an unexpected exception
    (a bug), in the verb or in one of its threads or its Textual app, is one line too, exit 2, saying where its
    details went (a crash file in the state dir; with $SYMMTUI_DEBUG set, the traceback is raised instead)."""
    del _INTERNAL[:]
    try:
        code = body()
    except UserError as exc:
        clitext.print_error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt as exc:
        if not _INTERNAL:
            return interrupted_code(exc)
        code = 2
    except RecursionError:
        clitext.print_error("input nested too deep to read (a file or value with thousands of levels); "
                            "check the file named in the command")
        return 2
    except MemoryError:
        clitext.print_error("out of memory reading the input; check the sizes of the files given")
        return 2
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        import traceback  # here: a crash only (traceback ~2 ms; every start imports boundary)

        what = f"{exc.__class__.__name__}: {exc}"
        clitext.print_error(_internal_line(what, crash_report(what, "".join(traceback.format_exception(exc)))))
        return 2
    if _INTERNAL:
        what, where = _INTERNAL[0]
        more = f" (and {len(_INTERNAL) - 1} more)" if len(_INTERNAL) > 1 else ""
        clitext.print_error(_internal_line(what + more, where))
        return 2
    return code


# ---------------------------------------------------------------- numbers and strings (argparse types)


def seconds(*, minimum: float = 0.0, maximum: float = MAX_SECONDS,
            zero: str | None = "no limit") -> Callable[[str], float]:
    """An argparse ``type``: a finite number of seconds in [minimum, maximum] (0 allowed when ``zero``)."""

    def parse(text: str) -> float:
        try:
            value = float(text[:64])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a number of seconds") from None
        zero_ok = zero is not None and value == 0
        if not math.isfinite(value) or not (zero_ok or minimum <= value <= maximum):
            span = f"between {minimum:g} and {maximum:.0f}" + (f" (0: {zero})" if zero is not None else "")
            raise argparse.ArgumentTypeError(f"must be a number of seconds {span}, got {shown(text)}")
        return value

    return parse


def number(minimum: float, maximum: float, what: str) -> Callable[[str], float]:
    """An argparse ``type``: a finite float in [minimum, maximum]; ``what`` says what it means."""

    def parse(text: str) -> float:
        try:
            value = float(text[:64])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a number ({what})") from None
        if not (math.isfinite(value) and minimum <= value <= maximum):
            raise argparse.ArgumentTypeError(
                f"must be a number between {minimum:g} and {maximum:g} ({what}), got {shown(text)}")
        return value

    return parse


def pid(text: str) -> int:
    """An argparse ``type``: a process id in 1..PID_LIMIT."""
    top = PID_LIMIT
    try:
        value = int(text[:32].strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a process id") from None
    if not 0 < value <= top:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a process id (1 to {top})")
    return value


PATH_MAX = 4095  # bytes of a whole path (Linux PATH_MAX less the NUL)
NAME_MAX = 255  # bytes of one path component


def path(text: str) -> str:
    """An argparse ``type`` for every path option: a name the kernel could accept (length per
    component and in all, no NUL), so no later stat or open fails with 'File name too long'."""
    raw = os.fsencode(text)
    if not raw:
        raise argparse.ArgumentTypeError("an empty path; give a file or directory name")
    if b"\x00" in raw:
        raise argparse.ArgumentTypeError(f"the path {shown(text)} holds a NUL byte")
    if len(raw) > PATH_MAX:
        raise argparse.ArgumentTypeError(f"a path of {len(raw)} bytes is too long (at most {PATH_MAX})")
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise argparse.ArgumentTypeError(
            f"the path {shown(text)} has a name of {len(longest)} bytes (at most {NAME_MAX} per name)")
    return text


def regex_problem(pattern: str) -> str | None:
    """Why a user's regex (``--ready``, ``--crash``, a profile's ``[rules]``) cannot be used, or None: RE2
    (``patterns.compile_user``) runs every user pattern in time linear in the line, and refuses what it cannot
    run so (look-arounds, back-references) in one line."""
    # here: RE2 and inspect (~13 ms): only a start given a user regex pays them
    from symmtui.patterns import PatternError, compile_user

    try:
        compile_user(pattern, what="regular expression")
    except PatternError as exc:
        return str(exc)
    return None


def check_values(args: argparse.Namespace) -> None:
    """The generic pass over every parsed option: strings capped, no NUL, floats finite, ints sane."""
    for name, value in vars(args).items():
        for item in value if isinstance(value, list | tuple) else (value,):
            option = "--" + name.removeprefix("dash_").replace("_", "-")
            if isinstance(item, str):
                if len(item) > MAX_VALUE_CHARS:
                    raise InputError(f"{option}: a value of {len(item)} characters is too long "
                                     f"(at most {MAX_VALUE_CHARS}); check what was passed")
                if "\x00" in item:
                    raise InputError(f"{option}: the value holds a NUL byte: {shown(item)}")
            elif isinstance(item, float) and not math.isfinite(item):
                raise InputError(f"{option} must be a finite number, got {item}")
            elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > 1 << 62:
                raise InputError(f"{option}: {item} is out of range")


# ---------------------------------------------------------------- paths and files


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def regular_file(path: str | os.PathLike[str], *, what: str, missing_ok: bool = False,
                 hint: str = "give a regular file") -> Path | None:
    """Stat ``path`` (never open it): a regular file -> the Path; missing -> None if ``missing_ok``;
    a directory, FIFO, device or socket -> InputError. ``what`` names it ("the log", "--standin")."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise InputError(f"{what} {shown(str(p))}: no such file; {hint}") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"{what} {shown(str(p))}: cannot read it ({reason}); {hint}") from None
    kind = _kind(st.st_mode)
    if kind is not None:
        raise InputError(f"{what} {shown(str(p))} is {kind}, not a regular file; {hint}")
    return p


_OPEN_FLAGS = os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def open_regular(path: str | os.PathLike[str], *, what: str, flags: int = os.O_RDONLY,
                 hint: str = "give a regular file") -> int:
    """Open a regular file without blocking and return its fd: stat first (a FIFO or a device is never
    opened), open ``O_NONBLOCK`` (one swapped in since the stat cannot block the open either: a FIFO
    opened for writing with no reader is ENXIO), fstat again. Anything else is an InputError; a missing
    file too, unless ``flags`` has ``O_CREAT``."""
    p = Path(path)
    regular_file(p, what=what, missing_ok=bool(flags & os.O_CREAT), hint=hint)
    try:
        fd = os.open(p, flags | _OPEN_FLAGS, 0o600)
    except FileNotFoundError:
        raise InputError(f"{what} {shown(str(p))}: no such file; {hint}") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise InputError(f"{what} {shown(str(p))} is a FIFO (named pipe), not a regular file; {hint}") from None
        verb = "write" if flags & (os.O_WRONLY | os.O_RDWR) else "read"
        raise InputError(f"cannot {verb} {what} {shown(str(p))} ({exc.strerror}); check its permissions") from None
    kind = _kind(os.fstat(fd).st_mode)  # it may have been swapped since the stat
    if kind is not None:
        os.close(fd)
        raise InputError(f"{what} {shown(str(p))} is {kind}, not a regular file; {hint}")
    return fd


def read_bytes(path: str | os.PathLike[str], *, what: str, max_bytes: int, last: bool = False,
               hint: str = "give a regular file") -> bytes:
    """A regular file's bytes, read without blocking (a FIFO never hangs) and at most ``max_bytes``:
    a larger file is an InputError, or with ``last`` its last ``max_bytes`` from a line start (an
    append-only file such as the launch history)."""
    fd = open_regular(path, what=what, hint=hint)
    cut = False
    try:
        if last:
            size = os.fstat(fd).st_size
            cut = size > max_bytes
            if cut:
                os.lseek(fd, size - max_bytes, os.SEEK_SET)
        chunks: list[bytes] = []
        total = 0
        limit = max_bytes if last else max_bytes + 1
        while total < limit:
            chunk = os.read(fd, min(1 << 20, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {what} {shown(str(path))} ({exc.strerror})") from None
    finally:
        os.close(fd)
    if total > max_bytes:
        raise InputError(f"{what} {shown(str(path))} is larger than {max_bytes >> 10} KiB; "
                         "is it the right file?")
    data = b"".join(chunks)
    if cut:
        data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
    return data


def read_text(path: str | os.PathLike[str], *, what: str, max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """A regular UTF-8 text file, capped (see :func:`read_bytes`); bad UTF-8 names the byte offset."""
    data = read_bytes(path, what=what, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{what} {shown(str(path))} is not UTF-8 text (line {line}, byte {exc.start}); "
                         "save it as UTF-8") from None


def parse_toml(text: str) -> dict[str, Any]:
    """tomllib.loads, with nesting so deep it would exhaust the stack turned into a TOMLDecodeError."""
    import tomllib  # ~5 ms to import: only the verbs that read a file pay it

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("arrays or tables nested too deep") from None


# ---------------------------------------------------------------- directories and the terminal


TEXTUAL_STREAMS = ("standard input", "standard error")
"""What a Textual app needs to be a terminal: it reads keys from standard input and draws on standard
error (its Linux driver writes to ``sys.__stderr__``), so ``symmtui --log x >file`` works and
``2>file`` does not."""


def require_terminal(what: str, *, streams: tuple[str, ...] = TEXTUAL_STREAMS,
                     hint: str = "run it in a terminal, or use `symmtui wait` / `symmtui scan` in scripts") -> None:
    """Refuse to start a full-screen ``what`` when one of ``streams`` ("standard input", "standard output",
    "standard error": the process's own, as the interpreter started) is not a terminal.

    Under `symmtui serve` (textual-serve sets TEXTUAL_DRIVER to Textual's web driver) the app talks to
    the browser over its pipes: no terminal is needed there."""
    if os.environ.get("TEXTUAL_DRIVER", "").startswith("textual.drivers.web_driver:"):
        return
    by_name = {"standard input": sys.__stdin__, "standard output": sys.__stdout__, "standard error": sys.__stderr__}
    for name in streams:
        stream = by_name[name]
        try:
            ok = stream is not None and stream.isatty()
        except (OSError, ValueError):
            ok = False
        if not ok:
            raise InputError(f"{what} needs a terminal ({name} is not one): {hint}")
