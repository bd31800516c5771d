"""A record whose JSON is its fields in the order they are declared, each under its own name (or the one
``_JSON_NAMES`` gives it), and read back the same way, a missing key as ``None``: the shape most result sections
have, written once instead of a hand-made ``to_json`` / ``from_json`` pair per record."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar, Mapping, Self, cast


class FlatRecord:
    """Mix into a frozen dataclass whose fields are JSON values (``to_json`` keeps their declared order)."""

    _JSON_NAMES: ClassVar[Mapping[str, str]] = {}
    """Field name -> the key the files use for it, where the two differ."""

    def to_json(self) -> dict:
        return {self._JSON_NAMES.get(f.name, f.name): getattr(self, f.name) for f in fields(cast(Any, self))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        return cast(Any, cls)(**{f.name: data.get(cls._JSON_NAMES.get(f.name, f.name)) for f in fields(cast(Any, cls))})
