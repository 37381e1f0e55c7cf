"""Which bundle a verb means: the path given, or the newest next to a launch profile's logs."""

from __future__ import annotations

from pathlib import Path

from symmtui.bundle.format import SUFFIX, BundleError, bundle_path, newest_bundle


def find_bundle(given: str | None, config: str | None) -> Path:
    """``given`` when set (one of the two), else the profile's: its ``log``'s bundle or its ``log_dir``'s newest."""
    if given is not None and config is not None:
        raise BundleError("give a bundle or --config FILE, not both")
    if given is not None:
        return Path(given)
    from symmtui.launch.profile import load_profile

    profile = load_profile(config)
    if profile.log is not None:
        first = bundle_path(profile.log)  # this log's bundles: LOG.symmtui-bundle.json.gz, LOG.2..., the newest
        newest = newest_bundle(first.parent, first.name[: -len(SUFFIX)])
        if newest is not None:
            return newest
    elif profile.log_dir is not None:
        found = newest_bundle(profile.log_dir)
        if found is not None:
            return found
    where = profile.log if profile.log is not None else profile.log_dir
    raise BundleError(f"no bundle ({SUFFIX}) next to the profile's logs in {where}: launch or wait with "
                      "this profile first (they record one), or give the bundle's path")
