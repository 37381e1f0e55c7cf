"""The catalogue of known bring-up failures, as data: TOML files read in name order (see docs/catalogue.md)."""
