"""Thin command-line verbs; each parses its options and calls the engine."""
