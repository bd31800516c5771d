"""How a hit-rate run knows its prediction holds: which sources agree with it (``EvidenceAgreement``, built by
``evidence.agreement``) and each endpoint's counters (``EngineRow``). The KV-event check block by block is in
``core.kv_event_records``, the replay of overlapping requests on the engine's timeline in ``core.timeline_records``.

The report (``report.markdown``'s evidence section, the CLI's table) reads them back after ``core.records.validate``
has checked the fields read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .flat_records import FlatRecord
from .sections import section

SOURCES = ("counters", "cached_tokens", "kv_events")
"""The three sources a prediction is checked against, in the files' order."""
_BRIEF_NAMES = {"counters": "counters", "cached_tokens": "cached_tokens", "kv_events": "KV events"}


@dataclass(frozen=True)
class EvidenceAgreement:
    """Whether each source agrees with the prediction (``None``: the source is missing, with the reason): the
    backend counters (total hit tokens), each request's ``cached_tokens``, the KV-event replay."""

    counters: bool | None
    cached_tokens: bool | None
    kv_events: bool | None
    requests_that_differ: Sequence[str]
    """The requests whose ``cached_tokens`` differ from their predicted hit tokens."""
    reasons: Mapping[str, str | None]
    """Why each missing source is missing (``None`` for a source that was checked)."""

    @property
    def sources(self) -> dict[str, bool | None]:
        """Each source's verdict by its name (``SOURCES``' order)."""
        return {"counters": self.counters, "cached_tokens": self.cached_tokens, "kv_events": self.kv_events}

    @property
    def all_agree(self) -> bool | None:
        """``False`` when a source disagrees (whatever could not be checked), ``None`` when one could not be
        checked and none disagrees, else ``True``."""
        verdicts = list(self.sources.values())
        return False if False in verdicts else None if None in verdicts else True

    def brief(self) -> str:
        """Each source in a few words, for a table cell (the Markdown report has the details)."""
        word = {True: "yes", False: "NO", None: "n/a"}
        return ", ".join(f"{_BRIEF_NAMES[name]} {word[agrees]}" for name, agrees in self.sources.items())

    def to_json(self) -> dict:
        return {**self.sources, "requests_that_differ": list(self.requests_that_differ),
                "reasons": {name: self.reasons.get(name) for name in SOURCES}, "all_agree": self.all_agree}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> EvidenceAgreement | None:
        """``None`` for a result without the section (a run that measured nothing)."""
        if not data:
            return None
        return cls(data.get("counters"), data.get("cached_tokens"), data.get("kv_events"),
                   data.get("requests_that_differ") or [], section(data, "reasons"))


def agreement_brief(result: Mapping[str, Any]) -> str:
    """A result's agreement in a few words (``n/a`` without one: a run that measured nothing), for a table cell."""
    agreement = EvidenceAgreement.from_json(section(result, "evidence_agreement"))
    return "n/a" if agreement is None else agreement.brief()


@dataclass(frozen=True)
class EngineRow(FlatRecord):
    """One endpoint / engine's counter deltas (``evidence.engine_rows``; the last row, ``all``, is their sum)."""

    engine: str
    hit_tokens: float | None
    query_tokens: float | None
    hit_rate: float | None
    """``None`` when nothing was queried or the hits exceed the queries."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EngineRow:
        """A row without its engine's name reads as ``?``."""
        return cls(data.get("engine") or "?", data.get("hit_tokens"), data.get("query_tokens"), data.get("hit_rate"))
