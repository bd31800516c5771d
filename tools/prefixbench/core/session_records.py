"""``sessions``' own sections as records: its request rows (``SessionRow``), the table per turn (``TurnLine``) and
the cache-off baseline beside it (``SessionsBaseline``).

``run.sessions`` builds them and ``LiveRunResult`` turns them into JSON when the result is written; the report
and the CLI read a file back through ``from_json`` (``core.records.validate`` has checked the fields they read).
The files keep their keys and order: a row names the tokens the client sent ``prompt_token_ids_len`` (the client's
``sent_prompt_tokens``), then the client estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from .flat_records import FlatRecord
from .request_rows import RequestRow

SESSION_ROW_KEYS = ("prompt_token_ids_len", "client_estimate_tokens")
"""The keys a sessions row writes after the client's row and its columns."""


@dataclass(frozen=True)
class SessionRow:
    """One turn of one session: the client's row with the session's columns (``user``, ``turn``, with one session
    at a time the counters' own ``counter_hit_tokens`` / ``counter_query_tokens``, ``predicted_hit_tokens``), and
    what client-side benchmarks would call cached (``None``: the previous turn's output is unknown)."""

    row: RequestRow
    client_estimate_tokens: int | None = None

    @property
    def user(self) -> int:
        return self.row.columns["user"]

    @property
    def turn(self) -> int:
        return self.row.columns["turn"]

    @property
    def counter_hit_tokens(self) -> int | None:
        return self.row.columns.get("counter_hit_tokens")

    def to_json(self) -> dict:
        data = self.row.to_json()
        data["prompt_token_ids_len"] = data.pop("sent_prompt_tokens")
        data["client_estimate_tokens"] = self.client_estimate_tokens
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionRow:
        """A row of a file (a key it lacks takes the client row's default)."""
        own = {k: v for k, v in data.items() if k not in SESSION_ROW_KEYS}
        if "prompt_token_ids_len" in data:
            own["sent_prompt_tokens"] = data["prompt_token_ids_len"]
        return cls(RequestRow.from_json(own), data.get("client_estimate_tokens"))


def client_estimates(rows: Sequence[RequestRow]) -> list[SessionRow]:
    """Each row with what client-side benchmarks call cached: the previous turn's prompt + output length (vLLM's
    multi-turn bench reports ``history / input`` as "approx cached percent"), blind to blocks and evictions."""
    by_turn = {(r.columns["user"], r.columns["turn"]): r for r in rows}

    def estimate(row: RequestRow) -> int | None:
        if row.columns["turn"] == 0:
            return 0
        previous = by_turn.get((row.columns["user"], row.columns["turn"] - 1))
        if previous is None or previous.output_tokens is None:
            return None
        return previous.sent_prompt_tokens + previous.output_tokens

    return [SessionRow(r, estimate(r)) for r in rows]


@dataclass(frozen=True)
class TurnLine(FlatRecord):
    """One turn number over every session: its finished requests, their prompt tokens, and each hit count
    (predicted, ``cached_tokens``, the counters, the client estimate) as tokens and as a rate of them (``None``:
    a request without the figure, or no cache queried, then with ``measured_reason``)."""

    turn: int | None
    """From 1 (``None``, like the counts, only where a file read back lacks it)."""
    requests: int | None
    prompt_tokens: int | None
    predicted_hit_tokens: int | None
    cached_tokens: int | None
    counter_hit_tokens: int | None
    client_estimate_tokens: int | None
    ttft_ms_p50: float | None
    predicted_hit_rate: float | None
    cached_rate: float | None
    counter_hit_rate: float | None
    client_estimate_rate: float | None
    measured_reason: str | None = None

    def caching_off(self, reason: str) -> TurnLine:
        """A cache never queried has no hit rate, not a 0% one."""
        return replace(self, cached_rate=None, counter_hit_rate=None, measured_reason=reason)

    def to_json(self) -> dict:
        """The fields in order, ``measured_reason`` only when there is one."""
        data = super().to_json()
        if self.measured_reason is None:
            del data["measured_reason"]
        return data


@dataclass(frozen=True)
class TurnTtft(FlatRecord):
    """TTFT p50 of one turn number: the cache-off run (G0) and this one (G1), and G0 / G1 (``None``: a side
    without a finished request)."""

    turn: int | None
    g0_ttft_ms_p50: float | None
    g1_ttft_ms_p50: float | None
    speedup: float | None


@dataclass(frozen=True)
class SessionsBaseline:
    """``--baseline``: the cache-off run's TTFT per turn beside this run's, where it ran, and a warning when it
    ran other sessions (not like for like)."""

    per_turn: Sequence[TurnTtft]
    baseline_endpoint: str | None
    baseline_caching_enabled: bool | None
    warning: str | None

    def to_json(self) -> dict:
        return {"per_turn": [t.to_json() for t in self.per_turn], "baseline_endpoint": self.baseline_endpoint,
                "baseline_caching_enabled": self.baseline_caching_enabled, "warning": self.warning}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SessionsBaseline | None:
        """``None`` for a result without a baseline."""
        if not data:
            return None
        return cls([TurnTtft.from_json(t) for t in data.get("per_turn") or []], data.get("baseline_endpoint"),
                   data.get("baseline_caching_enabled"), data.get("warning"))
