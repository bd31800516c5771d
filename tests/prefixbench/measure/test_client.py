"""The client's aggregates and arrival times (no server)."""

from __future__ import annotations


import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")


from tools.prefixbench.measure.client import RequestResult, aggregates, arrival_offsets  # noqa: E402


def _result(i, ttft, tpot, e2e, out=4, status="ok", gaps=(1.0, 2.0, 3.0)):
    return RequestResult(id=str(i), index=i, status=status, ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e,
                         output_tokens=out, prompt_tokens=10, itl_ms=list(gaps),
                         error=None if status == "ok" else "boom")


def test_aggregate_percentiles_throughput_and_errors():
    rows = [_result(i, ttft=float(i + 1), tpot=2.0, e2e=10.0) for i in range(10)] + [
        _result(10, None, None, None, out=None, status="error")]
    agg = aggregates(rows, duration_s=2.0).to_json()
    assert agg["error_count"] == 1 and agg["successful"] == 10
    assert agg["ttft_ms"]["p50"] == pytest.approx(5.5) and agg["ttft_ms"]["p90"] == pytest.approx(9.1)
    assert agg["ttft_ms"]["p99"] == pytest.approx(9.91)
    assert agg["itl_ms"]["count"] == 30
    assert agg["throughput_tokens_per_s"] == 40 / 2.0
    empty = aggregates([_result(0, None, None, None, out=None, status="error")], 1.0).to_json()
    assert empty["ttft_ms"] is None and empty["throughput_tokens_per_s"] is None


def test_arrival_offsets():
    assert arrival_offsets(3, None) == [0.0, 0.0, 0.0]
    assert arrival_offsets(3, 4.0) == [0.0, 0.25, 0.5]
    poisson = arrival_offsets(200, 10.0, poisson=True, seed=1)
    assert poisson == arrival_offsets(200, 10.0, poisson=True, seed=1)
    assert 15 < poisson[-1] < 25  # mean gap 0.1 s


def _stream_of(*chunks):
    import json

    from tools.prefixbench.measure.client import _Stream

    stream = _Stream(RequestResult(id="x", index=0))
    for i, chunk in enumerate(chunks):
        stream.take(chunk if isinstance(chunk, str) else json.dumps(chunk), float(i))
    return stream


def _chunk(ids, done_tokens):
    return {"choices": [{"index": 0, "text": "", "token_ids": ids}], "usage": {"completion_tokens": done_tokens}}


def test_generated_token_ids_are_recorded_when_the_server_streams_them():
    stream = _stream_of({**_chunk([5], 1), "choices": [{"text": "", "token_ids": [5], "prompt_token_ids": [1, 2]}]},
                        _chunk([6, 7], 3), {"choices": [], "usage": {"completion_tokens": 3}}, "[DONE]")
    result = stream.finish(0.0, 4.0)
    assert result.status == "ok" and result.output_token_ids == [5, 6, 7]
    assert result.row()["output_token_ids"] == [5, 6, 7]


def test_no_token_ids_from_the_server_leaves_none():
    result = _stream_of(_chunk(None, 1), {"choices": [{"text": "a"}], "usage": {"completion_tokens": 2}},
                        "[DONE]").finish(0.0, 2.0)
    assert result.status == "ok" and result.output_token_ids is None


@pytest.mark.parametrize("ids", ["5", [5, "6"], [-1], [True], {"a": 1}])
def test_malformed_token_ids_fail_that_request_with_the_reason(ids):
    from tools.prefixbench.measure.client import MalformedChunk

    with pytest.raises(MalformedChunk, match="token_ids"):
        _stream_of(_chunk(ids, 1))


def _finished(*chunks, sent=8, max_tokens=None):
    import json

    from tools.prefixbench.measure.client import _Stream

    stream = _Stream(RequestResult(id="x", index=0, sent_prompt_tokens=sent), max_tokens)
    for i, chunk in enumerate(chunks):
        stream.take(json.dumps(chunk), float(i))
    stream.take("[DONE]", 9.0)
    return stream.finish(0.0, 10.0)


def _final(**usage):
    return {"choices": [], "usage": {"prompt_tokens": 8, **usage}}


@pytest.mark.parametrize("chunks, max_tokens, field, why", [
    ([_chunk([5], 1), _chunk([6], 2), _final(completion_tokens=2, prompt_tokens_details={"cached_tokens": 9})], 2,
     "cached_tokens", "exceeds the prompt's 8 tokens"),
    ([_chunk([5], 1), _final(completion_tokens=1, prompt_tokens_details={"cached_tokens": -3})], 1,
     "cached_tokens", "is negative"),
    ([_chunk([5], 1), _chunk([6], 2), _final(completion_tokens=100_000)], None, "output_tokens", "disagrees"),
    ([_chunk([5], 1), _final(completion_tokens=5)], 4, "output_tokens", "exceeds the 4 asked for"),
    ([{"choices": [{"text": "a"}]}, {"choices": [{"text": "b"}]}, _final(completion_tokens=1)], None,
     "output_tokens", "fewer than the 2 chunks"),
])
def test_a_count_no_server_can_mean_is_dropped_with_the_reason_and_the_request_still_counts(chunks, max_tokens,
                                                                                           field, why):
    result = _finished(*chunks, max_tokens=max_tokens)
    assert result.status == "ok" and getattr(result, field) is None and why in result.usage_reason
    assert result.row()["usage_reason"] == result.usage_reason


def test_counts_that_fit_are_kept_as_the_server_sent_them():
    result = _finished(_chunk([5], 1), _chunk([6, 7], 3),
                       _final(completion_tokens=3, prompt_tokens_details={"cached_tokens": 7}), max_tokens=3)
    assert (result.cached_tokens, result.output_tokens, result.usage_reason) == (7, 3, None)
    assert result.tpot_ms == pytest.approx(500.0)


def _slow_first_connection(monkeypatch, delay_s):
    """The first new connection the client opens waits ``delay_s`` (DNS, a busy loop or a slow accept on a loaded
    machine); later ones open at once."""
    import asyncio

    import aiohttp

    real, left = aiohttp.TCPConnector._create_connection, [1]

    async def create(self, req, traces, timeout):
        if left[0]:
            left[0] -= 1
            await asyncio.sleep(delay_s)
        return await real(self, req, traces, timeout)

    monkeypatch.setattr(aiohttp.TCPConnector, "_create_connection", create)


def test_a_request_started_first_can_reach_the_server_second_and_the_order_check_sees_it(monkeypatch):
    """The CI failure of 5934c36: a request waiting for its connection reached the server after one started
    later. Start times order them a, b; the server saw b first; a's response began only after b was sent, so the
    hit b takes from a is counted as order dependent (the 5 ms margin on start times it replaced did not)."""
    from backend_fixtures import fake_server

    from tools.prefixbench.measure import client
    from tools.prefixbench.run.replay import order_dependent

    _slow_first_connection(monkeypatch, 0.4)
    shared = list(range(16))
    specs = [client.RequestSpec("a", shared + [1] * 16, 2), client.RequestSpec("b", shared + [2] * 16, 2)]
    with fake_server() as server:
        results, _ = client.send(server.base_url, "fake", specs, concurrency=2, offsets=[0.0, 0.1])
        arrived = list(server.prompts)
    a, b = results
    assert a.status == b.status == "ok" and b.sent_at_s - a.sent_at_s >= 0.09
    assert arrived == [specs[1].prompt_token_ids, specs[0].prompt_token_ids]  # the server saw b first
    assert b.sent_at_s < a.answered_at_s  # and the client can tell it might have
    ordered = client.server_order(results)
    assert [r.id for r in ordered] == ["a", "b"]
    prompts = {s.id: s.prompt_token_ids for s in specs}
    assert order_dependent(ordered, prompts, {"a": 0, "b": 16}, 16) == 16


def test_times_count_from_the_callers_origin_when_given():
    import time

    from backend_fixtures import fake_server

    from tools.prefixbench.measure import client

    origin = time.perf_counter() - 100.0  # a run that began 100 s ago
    with fake_server() as server:
        (result,), duration = client.send(server.base_url, "fake", [client.RequestSpec("a", [1, 2, 3], 3)],
                                          origin=origin)
    assert result.status == "ok" and duration < 50
    assert 100 <= result.sent_at_s <= result.answered_at_s < 150
    assert all(result.answered_at_s <= t < 150 for t, _ in result.stream_chunks)
    assert result.stream_chunks[0][0] - result.sent_at_s == pytest.approx(result.ttft_ms / 1000, abs=1e-6)
