"""The measured hit rate's evidence: 0/0 is no evidence, usage is a fallback only when complete."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

from backend_fixtures import prometheus_text  # noqa: E402

from tools.prefixbench.evidence import EVIDENCE_REQUIRED, hit_rate_evidence, replica_evidence  # noqa: E402
from tools.prefixbench.measure import metrics  # noqa: E402



def test_zero_queries_is_no_evidence_never_zero_percent():
    same = metrics.parse("u", prometheus_text(0, 0))
    delta = metrics.diff([same], [same])
    off = hit_rate_evidence(delta, caching_enabled=False, usage_cached_tokens=[0], usage_prompt_tokens=[9])
    assert off["hit_rate"] is None and off["hit_rate_evidence"] == "not_applicable"
    assert "0/0" in off["hit_rate_reason"]
    unknown = hit_rate_evidence(delta, caching_enabled=None)
    assert unknown["hit_rate"] is None and unknown["hit_rate_evidence"] == EVIDENCE_REQUIRED


def test_usage_is_the_fallback_only_when_complete():
    failed = metrics.Snapshot("u", time.time(), error="u answered HTTP 404")
    delta = metrics.diff([failed], [failed])
    complete = hit_rate_evidence(delta, caching_enabled=True, usage_cached_tokens=[0, 64, 64],
                                         usage_prompt_tokens=[100, 100, 100])
    assert complete["hit_rate_evidence"] == "per_request_usage" and complete["hit_rate"] == 128 / 300
    assert "HTTP 404" in complete["hit_rate_reason"]
    partial = hit_rate_evidence(delta, caching_enabled=True, usage_cached_tokens=[0, None],
                                        usage_prompt_tokens=[100, 100])
    assert partial["hit_rate"] is None and "1 of 2" in partial["hit_rate_reason"]


def test_counters_with_more_hits_than_the_phase_sent_do_not_fit_it():
    delta = metrics.diff([metrics.parse("u", prometheus_text(0, 0))], [metrics.parse("u", prometheus_text(900, 300))])
    fits = hit_rate_evidence(delta, caching_enabled=True, sent_prompt_tokens=400)
    assert fits["hit_rate"] == 300 / 900 and fits["hit_rate_evidence"] == "backend_metrics"
    unfit = hit_rate_evidence(delta, caching_enabled=True, sent_prompt_tokens=200)
    assert unfit["hit_rate"] is None and "do not fit" in unfit["hit_rate_reason"]


def test_usage_dropped_as_impossible_is_named_beside_the_missing_rate():
    from tools.prefixbench.evidence import from_results
    from tools.prefixbench.measure.client import RequestResult

    rows = [RequestResult(id="a", index=0, status="ok", prompt_tokens=64, sent_prompt_tokens=64, cached_tokens=None,
                          usage_reason="cached_tokens 150 exceeds the prompt's 64 tokens: dropped"),
            RequestResult(id="b", index=1, status="ok", prompt_tokens=64, sent_prompt_tokens=64, cached_tokens=48)]
    found = from_results(None, rows, True)
    assert found["hit_rate"] is None and "a: cached_tokens 150 exceeds" in found["hit_rate_reason"]
    delta = metrics.diff([metrics.parse("u", prometheus_text(0, 0))], [metrics.parse("u", prometheus_text(900, 300))])
    assert from_results(delta, rows, True)["hit_rate"] == 300 / 900
    assert "do not fit" in from_results(delta, rows, True, fit_sent=True)["hit_rate_reason"]


def test_an_idle_replica_counts_zero_of_zero_for_the_cluster_but_has_no_rate_of_its_own():
    """g0g1 --replicas 2 --routing prefix_affinity sends every request to one replica when they share a prefix:
    the other one's 0/0 used to null the cluster's hit rate (and the decision fell back to "no evidence")."""
    before, after = (metrics.parse("u", prometheus_text(q, h)) for q, h in ((100, 40), (100, 40)))
    delta = metrics.diff([before], [after])
    idle = replica_evidence(delta, [], True, served=0)
    assert idle.hit_rate is None and (idle.hit_tokens, idle.query_tokens) == (0, 0)
    assert idle.hit_rate_evidence == "backend_metrics" and "no request" in idle.hit_rate_reason
    assert replica_evidence(delta, [], True, served=None).hit_tokens is None  # placement unknown: no evidence
    off = replica_evidence(delta, [], False, served=0)
    assert off.hit_rate_evidence == "not_applicable" and off.hit_tokens is None  # caching off stays off
    other_traffic = metrics.diff([before], [metrics.parse("u", prometheus_text(164, 72))])
    counted = replica_evidence(other_traffic, [], True, served=0)  # sent nothing, yet counted: say so, as measured
    assert counted.hit_rate == 0.5 and counted.hit_rate_reason is None
    failed = metrics.Snapshot("u", time.time(), error="u answered HTTP 404")
    broken = replica_evidence(metrics.diff([failed], [failed]), [], True, served=0)
    assert broken.hit_rate_evidence == EVIDENCE_REQUIRED and broken.hit_tokens is None
