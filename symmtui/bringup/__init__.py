"""Running a bring-up's watch: the Bringup threads (follower, events, readiness, probe, pid watch), the one-shot scan."""
