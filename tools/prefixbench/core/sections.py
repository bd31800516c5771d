"""Reading an optional object out of JSON that came from outside (a file, a replica row, a server's answer).

One rule, used by every record's ``from_json`` and every report: a section that is absent, null or of another
type reads as an empty object, so a reader asks ``section(data, key).get(...)`` instead of ``(data.get(key) or {})``
followed by ``.get(...)``, which breaks on a list or a string.
"""

from __future__ import annotations

from typing import Any, Mapping


def section(data: Any, key: str) -> Mapping:
    """``data[key]`` when it is a JSON object, else an empty one: a record read from a file (or sent by a
    server) may lack an optional section or hold null there."""
    value = data.get(key) if isinstance(data, Mapping) else None
    return value if isinstance(value, Mapping) else {}
