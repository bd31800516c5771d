"""The client's aggregates and arrival times (no server)."""

from __future__ import annotations


import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")


from tools.prefixbench.measure.client import RequestResult, aggregate, arrival_offsets  # noqa: E402


def _result(i, ttft, tpot, e2e, out=4, status="ok", gaps=(1.0, 2.0, 3.0)):
    return RequestResult(id=str(i), index=i, status=status, ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e,
                         output_tokens=out, prompt_tokens=10, itl_ms=list(gaps),
                         error=None if status == "ok" else "boom")


def test_aggregate_percentiles_throughput_and_errors():
    rows = [_result(i, ttft=float(i + 1), tpot=2.0, e2e=10.0) for i in range(10)] + [
        _result(10, None, None, None, out=None, status="error")]
    agg = aggregate(rows, duration_s=2.0)
    assert agg["error_count"] == 1 and agg["successful"] == 10
    assert agg["ttft_ms"]["p50"] == pytest.approx(5.5) and agg["ttft_ms"]["p90"] == pytest.approx(9.1)
    assert agg["ttft_ms"]["p99"] == pytest.approx(9.91)
    assert agg["itl_ms"]["count"] == 30
    assert agg["throughput_tokens_per_s"] == 40 / 2.0
    empty = aggregate([_result(0, None, None, None, out=None, status="error")], 1.0)
    assert empty["ttft_ms"] is None and empty["throughput_tokens_per_s"] is None


def test_arrival_offsets():
    assert arrival_offsets(3, None) == [0.0, 0.0, 0.0]
    assert arrival_offsets(3, 4.0) == [0.0, 0.25, 0.5]
    poisson = arrival_offsets(200, 10.0, poisson=True, seed=1)
    assert poisson == arrival_offsets(200, 10.0, poisson=True, seed=1)
    assert 15 < poisson[-1] < 25  # mean gap 0.1 s
