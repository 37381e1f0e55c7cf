"""The dashboard gives SIGCONT and SIGTSTP back as it unmounts, before Textual's driver leaves application mode:
the driver sets them when it is made and leaves them, and a SIGCONT after it left application mode (tmux sends
one with a closed pane's SIGHUP) started a new non-daemon input thread that nothing stopped. The process hung at
its exit, that thread spinning a core on the closed terminal (found after a real-tmux test, 21 minutes on)."""

from __future__ import annotations

import signal
from types import FrameType

from symmtui.ui.app import SymmApp
from tests.ui.kit import crashed_session, settle

JOB_CONTROL = (signal.SIGCONT, signal.SIGTSTP)


async def test_the_dashboard_gives_job_control_back_as_it_unmounts() -> None:
    def textuals(signum: int, frame: FrameType | None) -> None:  # where Textual's driver puts its own
        raise AssertionError("not sent in this test")

    before = {sig: signal.signal(sig, textuals) for sig in JOB_CONTROL}
    try:
        app = SymmApp(crashed_session())
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert all(signal.getsignal(sig) is textuals for sig in JOB_CONTROL)  # ctrl+z works while it runs
        # run_test is not entry.run_app (whose end resets them too): only the app's unmount can have
        assert {sig: signal.getsignal(sig) for sig in JOB_CONTROL} == {sig: signal.SIG_DFL for sig in JOB_CONTROL}
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
