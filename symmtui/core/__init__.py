"""The headless bring-up engine: log following, line rules, readiness, probes, diagnosis (no Textual)."""
