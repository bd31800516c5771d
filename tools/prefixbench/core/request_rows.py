"""One request of a result's ``requests`` list, as a record.

The client (``measure.client.RequestResult.row``) builds the row from what it saw; a command appends its own
columns after it (the G0 / G1 schedule a ``pair_position``, every live command ``predicted_hit_tokens``, ``sessions``
the user and turn, ``isolation`` the tenant and salt, the replica runs a ``replica``). The layers pass rows on as
records; ``to_json`` writes the client's keys in the order the files always had, then the command's columns in the
order they were added (``tests/.../test_g0g1_golden.py`` and ``test_live_golden.py`` compare the files), and
``from_json`` reads a row of a file back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class RequestRow:
    """One request as the client saw it (``cached_tokens`` is ``None`` when the server did not report it; the
    ITL list is summarised as its mean and maximum) and the command's own ``columns`` after it."""

    id: str
    index: int
    status: str = "error"
    error: str | None = None
    http_status: int | None = None
    prompt_tokens: int | None = None
    sent_prompt_tokens: int = 0
    output_tokens: int | None = None
    cached_tokens: int | None = None
    sent_at_s: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    output_token_ids: list[int] | None = None
    usage_reason: str | None = None
    itl_ms_mean: float | None = None
    itl_ms_max: float | None = None
    columns: Mapping[str, Any] = field(default_factory=dict)
    """The command's own columns, written after the client's in the order they were added."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def predicted_hit_tokens(self) -> int | None:
        """The engine model's hit tokens for this request (live commands)."""
        return self.columns.get("predicted_hit_tokens")

    def with_columns(self, **columns: Any) -> RequestRow:
        """The row with these columns added after the others (a column it has keeps its place, as in a dict). The
        client's own keys are not columns: a command that wrote one would hide what the client saw."""
        clash = sorted(set(CLIENT_KEYS) & columns.keys())
        if clash:
            raise ValueError(f"{', '.join(clash)}: the client's own keys, not a command's columns")
        return replace(self, columns={**self.columns, **columns})

    def to_json(self) -> dict:
        data = {name: getattr(self, name) for name in CLIENT_KEYS}
        if self.output_token_ids is not None:
            data["output_token_ids"] = list(self.output_token_ids)
        return {**data, **self.columns}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestRow:
        """A row of a file or a caller's mapping: a key it lacks takes its default, and a field holds whatever
        JSON the file had (readers of files not checked by ``core.records.validate`` check the types they use)."""
        known = {name: data[name] for name in CLIENT_KEYS if name in data}
        known.setdefault("id", str(data.get("index", "")))
        known.setdefault("index", 0)
        return cls(**known, columns={k: v for k, v in data.items() if k not in CLIENT_KEYS})


CLIENT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(RequestRow) if f.name != "columns")
"""The client's keys, in the files' order."""


def row_of(row: RequestRow | Mapping[str, Any]) -> RequestRow:
    """A row as a record: the layers pass records, a file or a caller's JSON gives a mapping (read here)."""
    return row if isinstance(row, RequestRow) else RequestRow.from_json(row)


def rows_of(rows: Sequence[RequestRow | Mapping[str, Any]]) -> list[RequestRow]:
    return [row_of(r) for r in rows]
