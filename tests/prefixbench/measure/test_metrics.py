"""Prometheus snapshots and deltas: per engine, older names, resets, unreachable endpoints."""

from __future__ import annotations


import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

from backend_fixtures import REAL_SHAPE, bump, prometheus_text  # noqa: E402

from tools.prefixbench.evidence import EVIDENCE_REQUIRED, hit_rate_evidence  # noqa: E402
from tools.prefixbench.measure import metrics  # noqa: E402



def test_diff_gives_per_engine_and_summed_deltas_and_server_timing():
    before = metrics.parse("u", REAL_SHAPE)
    after = metrics.parse("u", bump(REAL_SHAPE, prefix_cache_queries_total__0=400, prefix_cache_hits_total__0=240,
                                     prefix_cache_queries_total__1=150, prefix_cache_hits_total__1=10,
                                     time_to_first_token_seconds_sum__0=2.0,
                                     time_to_first_token_seconds_count__0=8))
    delta = metrics.diff([before], [after]).to_json()  # as the files hold it
    assert delta["problems"] == []
    assert delta["counters"]["queries"] == {"name": "vllm:prefix_cache_queries", "total": 400,
                                            "per_engine": {"0": 300, "1": 100}}
    assert delta["counters"]["hits"]["per_engine"] == {"0": 200, "1": 0}
    assert delta["server_timing_ms"]["ttft"]["mean_ms"] == pytest.approx(250.0)
    evidence = hit_rate_evidence(delta, caching_enabled=True)
    assert evidence["hit_rate"] == 200 / 400 and evidence["hit_rate_evidence"] == "backend_metrics"
    assert metrics.cache_config([after])["block_size"] == 128
    assert metrics.cache_config([after])["enable_prefix_caching"] is True


def test_older_counter_names_are_a_fallback():
    old = prometheus_text(10, 5).replace("vllm:prefix_cache_", "vllm:gpu_prefix_cache_")
    new = prometheus_text(30, 15).replace("vllm:prefix_cache_", "vllm:gpu_prefix_cache_")
    delta = metrics.diff([metrics.parse("u", old)], [metrics.parse("u", new)]).to_json()
    assert delta["counters"]["queries"]["name"] == "vllm:gpu_prefix_cache_queries"
    assert hit_rate_evidence(delta, caching_enabled=True)["hit_rate"] == 0.5


def test_counter_going_backwards_or_recreated_is_a_reset_not_a_rate():
    backwards = metrics.diff([metrics.parse("u", prometheus_text(500, 200))],
                             [metrics.parse("u", prometheus_text(100, 50))])
    recreated = metrics.diff([metrics.parse("u", prometheus_text(100, 50, created=1.0))],
                             [metrics.parse("u", prometheus_text(900, 450, created=2.0))])
    for delta in (backwards, recreated):
        assert any("counter reset" in p for p in delta.problems)
        evidence = hit_rate_evidence(delta, caching_enabled=True)
        assert evidence["hit_rate"] is None
        assert evidence["hit_rate_evidence"] == EVIDENCE_REQUIRED
        assert "counter reset" in evidence["hit_rate_reason"]


def test_scrape_of_a_closed_port_is_recorded_not_raised():
    from tools.prefixbench.serve.ports import free_port

    snap = metrics.scrape(f"http://127.0.0.1:{free_port()}/metrics", timeout_s=2)
    assert not snap.ok and "cannot reach" in snap.error


def test_a_scrape_that_is_never_answered_costs_one_timeout_and_none_runs_past_the_deadline():
    """Issue 25 F: a server that accepts and never answers is not retried (each retry would cost the whole
    timeout again), and a scrape after ``ends_at`` is not even tried."""
    import contextlib
    import socket
    import time

    with socket.socket() as silent:  # the kernel accepts the connection; nobody ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/metrics"
        started = time.monotonic()
        snap = metrics.scrape(url, timeout_s=0.5)
        assert not snap.ok and "no answer within 0.5 s" in snap.error
        assert time.monotonic() - started < 2.0
        silent.setblocking(False)
        tried = 0
        with contextlib.suppress(BlockingIOError):  # the connections the scrape made, queued in the backlog
            while True:
                silent.accept()[0].close()
                tried += 1
        assert tried == 1, f"{tried} connections: a scrape that was accepted and never answered was retried"
        silent.setblocking(True)
        started = time.monotonic()
        settled = metrics.settled_snapshot(url, timeout_s=30.0, scrape_timeout_s=0.5, ends_at=started + 1.0)
        assert not settled[0].ok and time.monotonic() - started < 2.5
        late = metrics.snapshot([url], ends_at=time.monotonic() - 1)
        assert "deadline had passed" in late[0].error


def test_a_published_block_count_no_server_has_is_dropped_with_a_reason():
    from tools.prefixbench.measure.metrics import cache_config, parse

    for published, kept in [("1000000000", 1_000_000_000), ("1000000001", None), ("9" * 400, None)]:
        text = ('# TYPE vllm:cache_config_info gauge\n'
                f'vllm:cache_config_info{{block_size="16",enable_prefix_caching="True",num_gpu_blocks="{published}"}} 1\n')
        config = cache_config([parse("http://x/metrics", text)])
        assert config["num_blocks"] == kept and config["block_size"] == 16
        assert ("num_gpu_blocks" in config.get("dropped", {})) == (kept is None)


def test_a_chunk_nested_too_deeply_fails_its_request_not_the_run():
    from tools.prefixbench.measure.client import MalformedChunk, RequestResult, _Stream

    stream = _Stream(RequestResult(id="r", index=0))
    with pytest.raises(MalformedChunk, match="nested too deeply"):
        stream.take("[" * 200_000 + "]" * 200_000, 0.0)


@pytest.mark.parametrize("text, urls, interval", [
    (prometheus_text(10, 5), 1, metrics.SETTLE_INTERVAL_S),
    (REAL_SHAPE, 1, metrics.SETTLE_INTERVAL_MANY_S),  # two engines behind one endpoint
    (prometheus_text(10, 5), 2, metrics.SETTLE_INTERVAL_MANY_S),  # two endpoints
])
def test_the_settle_interval_is_longer_where_another_front_end_may_record_the_stats(monkeypatch, text, urls,
                                                                                      interval):
    """One engine behind one endpoint: vLLM's counters are final when a response ends, so a short margin; with
    several, the stats may reach another API server than the one that answered, so a longer one."""
    scraped, slept = [], []
    monkeypatch.setattr(metrics, "scrape", lambda url, *args, **kwargs: scraped.append(url) or metrics.parse(url, text))
    monkeypatch.setattr(metrics.time, "sleep", slept.append)
    settled = metrics.settled_snapshot([f"u{i}" for i in range(urls)])
    assert slept == [interval] and len(scraped) == 2 * urls and all(s.ok for s in settled)
    assert metrics.settled_snapshot("u0", interval_s=0.25) and slept[-1] == 0.25  # a caller's own interval wins
