"""Judging a log: rules, events and tracebacks, ranks, readiness, diagnosis, the verdict, the ETA and the Board."""
