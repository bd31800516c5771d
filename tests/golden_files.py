"""What the golden-file tests (tests/prefixbench/run/test_live_golden.py, test_g0g1_golden.py) leave out of a
file before they compare it: timings, timestamps, the environment, ports and folders, which differ on every run."""

from __future__ import annotations

import re

TIMING_KEYS = {"timing", "started_at", "finished_at", "environment", "sent_at_s", "ttft_ms", "tpot_ms", "itl_ms",
               "e2e_ms", "itl_ms_mean", "itl_ms_max", "duration_s", "throughput_tokens_per_s",
               "request_throughput_per_s", "output_throughput_tokens_per_s", "ttft_ms_p50", "server_timing_ms",
               "latency_s", "first_token_at_s", "finished_at_s", "interval_s", "total_tokens_per_s"}


def normalized(value, where: str = ""):
    """``value`` without timings, timestamps, the environment, ports and folders."""
    if isinstance(value, dict):
        return {k: normalized(v, k) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [normalized(v, where) for v in value]
    if isinstance(value, str):
        value = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", value)
        return re.sub(r"/\S*/(trace\.jsonl|out\.json)", r"TMP/\1", value)
    return value
