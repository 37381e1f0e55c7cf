"""Benchmarks: one module per area, each printing a table against a baseline measured in the same run."""
