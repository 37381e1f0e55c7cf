"""What a front end asks of a Session: one frozen value per intent, answered by ``SessionLike.ask``.

An intent is the one way a front end acts (launch, stop, patch, the profile fix, stacks, a signal); the
answer's type is the intent's parameter, so ``session.ask(Launch())`` is a :class:`Launched`. Intents block
(a launch waits for the old server to go): ask them from a worker thread, never on a UI loop. State is never
asked for: it comes in the Boards the Session posts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from msgspec import Struct

if TYPE_CHECKING:
    import signal

    from symmtui.launch.history import Estimate
    from symmtui.launch.nodes import StopCommandResult
    from symmtui.launch.profilefix import ProfileFix
    from symmtui.launch.report import OnProgress, StopReport
    from symmtui.launch.state import LaunchRecord
    from symmtui.patch.preflight import Prediction
    from symmtui.proc.identity import Listed, Signalled  # noqa: F401 - Signalled is named in a base's string
    from symmtui.session.messages import PatchState  # noqa: F401 - named in a base's string (the answer's type)
    from symmtui.session.patching import PatchView
    from symmtui.stacks.report import StacksReport  # noqa: F401 - named in a base's string (the answer's type)

T = TypeVar("T")


class Intent(Generic[T]):
    """An intent whose answer is a ``T``."""

    __slots__ = ()  # a mixin of Structs: no instance dict of its own


class Launched(Struct, frozen=True):
    """What a launch intent did: each node's new launch, the warnings, the SM120 preflight's prediction."""

    records: tuple[tuple[str, LaunchRecord], ...]
    warnings: tuple[str, ...] = ()
    prediction: Prediction | None = None
    logs: tuple[str, ...] = ()
    """Where each node's log is read: its file, or `its log command`."""
    estimate: Estimate | None = None
    """The head's earlier launches of this command (the ETA), read after the launch."""


class NodeStop(Struct, frozen=True):
    """What stopping one node did: its stop command's result, its local launch's report, or why not."""

    node: str
    command: StopCommandResult | None = None
    report: StopReport | None = None
    error: str | None = None
    exit_code: int = 2

    @property
    def reached(self) -> bool:
        """False when the node could not be reached (its stop command failed) or its stop failed."""
        return (self.command is None or self.command.ok) and self.error is None


class Launch(Struct, Intent[Launched], frozen=True):
    """Stop what was launched before, check the patch (a local node), launch every node again, follow it.
    ``checked=False``: launch without stopping or checking first (the demo's first launch)."""

    on_progress: OnProgress | None = None
    preflight: bool = True
    block_on_prediction: bool = False
    checked: bool = True


class Stop(Struct, Intent["tuple[NodeStop, ...]"], frozen=True):
    """Stop every node (its stop command, its whole local tree), then wait for GPU memory and the port."""

    on_progress: OnProgress | None = None
    grace: float | None = None


class KillStranger(Struct, Intent[bool], frozen=True):
    """End ``pid``, a process symmtui did not start that holds the head's port or GPU memory (the user
    confirmed it); True when it is gone."""

    pid: int


class SignalProcess(Struct, Intent["Signalled"], frozen=True):
    """Send ``sig`` to a process the user picked from a list (the process view: k / K), if it is still what was
    listed (pid, start time, owner: ``proc.identity``, checked at that moment); one outside the server's tree only
    ``by_pid`` (the user typed its pid); pid 1 and symmtui itself never. The answer says what happened."""

    listed: Listed
    sig: signal.Signals
    by_pid: bool = False


class StillRunning(Struct, Intent["tuple[str, ...]"], frozen=True):
    """The nodes whose launch (any process of it) still runs."""


class CheckPatch(Struct, Intent["PatchView"], frozen=True):
    """The SM120 patch's check and diff for this session's install and GPUs."""


class ApplyPatch(Struct, Intent["PatchState"], frozen=True):
    """Apply the SM120 patch the user saw (``view``); the Boards' advice follows the new state."""

    view: PatchView


class RevertPatch(Struct, Intent["PatchState"], frozen=True):
    """Revert the SM120 patch."""


class PlanFix(Struct, Intent["ProfileFix | None"], frozen=True):
    """The profile change of ``node``'s first diagnosis whose action is a flag or a variable (None: none)."""

    node: str | None = None


class ApplyFix(Struct, Intent[None], frozen=True):
    """Write the profile change (atomically) and launch with it from the next relaunch on."""

    fix: ProfileFix


class RequestStacks(Struct, Intent[None], frozen=True):
    """Dump ``node``'s server processes on a worker thread; a StacksTaken message brings the dump."""

    node: str | None = None
    native: bool = False


class DumpStacks(Struct, Intent["tuple[StacksReport, str | None]"], frozen=True):
    """Dump ``node``'s server processes now and answer with the dump and where it was saved (``keep``);
    UserError when there is nothing to dump or ptrace was refused for every process."""

    node: str | None = None
    native: bool = False
    limit: float = 10.0
    keep: bool = True


class Say(Struct, Intent[None], frozen=True):
    """A one-line note for the user, posted to every reader (``severity``: information, warning, error)."""

    text: str
    severity: str = "information"
