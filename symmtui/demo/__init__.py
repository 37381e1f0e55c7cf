"""The offline demo: a simulated SGLang server, a sandbox of tables, the story."""
