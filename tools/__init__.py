"""Project tooling: the prefixbench library and the notebook-facing runtime helpers."""
