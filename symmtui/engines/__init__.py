"""The engine table, as data: one TOML file per serving engine (record prefixes, request lines, markers, detection; docs/catalogue.md)."""
