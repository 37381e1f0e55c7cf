"""The SM120 patch for SGLang / vLLM symmetric-memory tables: check, diff, apply, revert."""
