"""Which bundle a verb means: the path given, the newest of a launch profile's logs, or the newest of all."""

from __future__ import annotations

from pathlib import Path

from symmtui.bundle import store
from symmtui.bundle.format import SUFFIX, BundleError
from symmtui.launch.profile import load_profile

MAX_LOGS = 10_000  # a profile's log_dir holds one log per launch: the newest this many are looked at


def find_bundle(given: str | None, config: str | None) -> Path:
    """``given`` when set (one of the two); with ``config`` the newest bundle of that profile's ``log`` or
    of the logs in its ``log_dir``; with neither the newest bundle in the store."""
    if given is not None and config is not None:
        raise BundleError("give a bundle or --config FILE, not both")
    if given is not None:
        return Path(given)
    where = store.store_dir()
    if config is None:
        found = store.newest(where)
        if found is None:
            raise BundleError(f"no bundle ({SUFFIX}) in {where} yet: `symmtui wait` or `launch` records one "
                              "(unless --no-record), or give the bundle's path")
        return found

    profile = load_profile(config)
    logs: list[Path] = []
    if profile.log is not None:
        logs.append(Path(profile.log))
    elif profile.log_dir is not None:
        try:
            logs = sorted(Path(profile.log_dir).glob("*.log"), reverse=True)[:MAX_LOGS]
        except OSError:
            logs = []
    found = store.newest(where, {store.stem(log, "") for log in logs})
    if found is None:
        source = profile.log if profile.log is not None else profile.log_dir
        raise BundleError(f"no bundle in {where} of the profile's logs ({source}): launch or wait with this "
                          "profile first (they record one), or give the bundle's path")
    return found
