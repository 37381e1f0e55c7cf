"""The patch intents bound to one target (site, package, capability): blocking, run them off the UI loop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from symmtui.errors import UserError
from symmtui.session.messages import PatchState

if TYPE_CHECKING:  # the patch engine loads on the first check: `wait` and `launch` build a Patcher, never use it
    from symmtui.gpu.facts import PatchFacts
    from symmtui.patch import Capability, CheckReport


class PatchView(Struct, frozen=True):
    """What the patch modal shows: the check report, the exact diff, and what can be done."""

    report: CheckReport
    diff: str
    capability: str

    @property
    def can_apply(self) -> bool:
        return self.report.state == "needed" and not self.report.write_problem and not self.report.symlink_problem

    @property
    def can_revert(self) -> bool:
        return self.report.state == "applied"

    @property
    def diff_note(self) -> str:
        if self.report.state == "applied":
            return "The patch is applied: y reverts it to the original bytes symmtui saved."
        state = self.report.state
        if state == "present":
            return "Nothing to change: this release already has the capability."
        if state == "not-applicable":
            return (f"Nothing to do: a GPU of capability {self.capability} does not use these tables "
                    "(symmetric memory is off below capability 9), so there is no crash to fix.")
        if state == "needed":  # needed, but the files cannot be written (see the report's problem)
            return "No diff applied: the files cannot be written (see above)."
        return "No diff: the tables are not in a shape symmtui patches (see above)."


class Patcher(Struct):
    """check / apply / revert on one package; the host's facts are asked when needed (NVML may be late).

    ``facts`` is :func:`symmtui.gpu.facts.patch_facts` over the dashboard's NVML: the same capability
    and NVLink answer `symmtui patch check` uses, so both give the same caveats.
    """

    site: Path | None
    package: str | None
    facts: Callable[[], PatchFacts]
    python: str | None = None

    def _facts(self) -> tuple[Capability, PatchFacts]:
        from symmtui.patch import Capability  # the patch engine (~45 ms): only a session that patches

        facts = self.facts()
        if facts.capability is None:
            raise UserError(
                f"GPU compute capability unknown ({facts.reason or 'NVML unavailable'}): "
                "use symmtui patch --capability 12"
            )
        return Capability.of(facts.capability), facts

    def check(self) -> PatchView:
        from symmtui.patch import check, diff  # the patch engine (~45 ms): only a session that patches
        from symmtui.patch.hostcaps import with_others

        cap, facts = self._facts()
        report = check(self.site, self.package, cap, python=self.python, nvlink=facts.nvlink)
        report = with_others(report, facts.capabilities.also_needed)
        text = diff(self.site, self.package, cap, python=self.python) if report.state == "needed" else ""
        return PatchView(report, text, str(cap))

    def apply(self, view: PatchView) -> PatchState:
        """Apply the diff the user saw (refused if the files changed since); the new state as data."""
        from symmtui.patch import apply  # the patch engine (~45 ms): only a session that patches

        cap, facts = self._facts()
        result = apply(self.site, self.package, cap, python=self.python, expected=view.report, nvlink=facts.nvlink)
        return PatchState(applied=result.status in ("applied", "already"), text=result.message)

    def revert(self) -> PatchState:
        """Put the original bytes back."""
        from symmtui.patch import revert  # the patch engine (~45 ms): only a session that patches

        return PatchState(applied=False, text=revert(self.site, self.package, python=self.python).message)
