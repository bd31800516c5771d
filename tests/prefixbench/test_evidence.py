"""The measured hit rate's evidence: 0/0 is no evidence, usage is a fallback only when complete."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

from backend_fixtures import prometheus_text  # noqa: E402

from tools.prefixbench.evidence import EVIDENCE_REQUIRED, hit_rate_evidence  # noqa: E402
from tools.prefixbench.measure import metrics  # noqa: E402

REAL_SHAPE = """# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 50.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 40.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 10.0
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_cache_hit"} 40.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_compute"} 60.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",enable_prefix_caching="True",engine="0",num_gpu_blocks="16384"} 1.0
"""


def _bump(text: str, **new_values: float) -> str:
    """The same exposition with some sample values replaced: ``name__engine=value``."""
    lines = []
    for line in text.splitlines():
        for key, value in new_values.items():
            name, engine = key.split("__")
            if line.startswith(f"vllm:{name}{{engine=\"{engine}\""):
                line = line.rsplit(" ", 1)[0] + f" {value}"
        lines.append(line)
    return "\n".join(lines) + "\n"


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
