"""The tables read from TOML: the engine table and the catalogue, their rule types and their cache."""
