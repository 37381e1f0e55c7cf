"""The patch intents bound to one target (site, package, capability): blocking, run from UI workers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from symmtui.patch import CheckReport, apply, check, diff, revert


@dataclass(frozen=True)
class PatchView:
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


@dataclass
class Patcher:
    """check / apply / revert on one package; `capability` is asked when needed (NVML may be late)."""

    site: Path | None
    package: str | None
    capability: Callable[[], int | None]
    python: str | None = None
    nvlink: Callable[[], bool | None] = lambda: None

    def _cap(self) -> int:
        from symmtui.errors import UserError

        cap = self.capability()
        if cap is None:
            raise UserError("GPU compute capability unknown (NVML unavailable): use symmtui patch --capability 12")
        return cap

    def check(self) -> PatchView:
        cap = self._cap()
        report = check(self.site, self.package, cap, python=self.python, nvlink=self.nvlink())
        text = diff(self.site, self.package, cap, python=self.python) if report.state == "needed" else ""
        return PatchView(report, text, str(cap))

    def apply(self, view: PatchView) -> str:
        result = apply(self.site, self.package, self._cap(), python=self.python, expected=view.report,
                       nvlink=self.nvlink())
        return result.message

    def revert(self) -> str:
        return revert(self.site, self.package, python=self.python).message
