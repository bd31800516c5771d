"""The bottom layer: what every other layer may use and that uses nothing of the library.

``errors`` (one ``InputError`` that names the field), ``files`` (atomic writes, strict JSON, line-numbered
JSONL), ``paths`` (the repository, the cache folder, default inputs and outputs), ``provenance`` (clock,
machine, libraries, GPU, git), ``processes`` (killing process trees), ``progress`` (progress bars), ``usage``
(the one-line argparse error every command gives) and ``records`` (the typed result schemas and their loaders).
"""
