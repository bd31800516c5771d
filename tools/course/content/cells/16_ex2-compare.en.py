def compare_prefix_cache_to_baseline(baseline: Dict[str, float], candidate: Dict[str, float]) -> Dict[str, float]:
    """The change of hit rate, TTFT and overhead from baseline to candidate (always candidate − baseline).

    Return hit_rate_gain (larger is better), ttft_delta_ms and overhead_delta (smaller is better; negative means
    better), each a plain Python subtraction, not rounded, without tolerance. The rules (the one contract):
    - baseline and candidate must be dicts, else raise ValueError;
    - both must have hit_rate, ttft_ms and overhead, all numbers (int or float; a bool, a string or NaN is not); a
      missing, None or non-number one raises ValueError;
    - the ranges checked: hit_rate in [0, 1], ttft_ms >= 0, else raise ValueError; overhead only has to be a number
      (its range is not checked); ttft_ms or overhead of float("inf") is accepted;
    - when the two runs' workload_id or hit_rate_unit differ, raise ValueError (different workloads or units cannot
      be compared; as in summarize, values are only compared, not checked; a missing field and an explicit None
      count as the same value);
    - no argument is modified: baseline and candidate are the same after the call; name and other fields are not
      checked.
    The result serves a report's comparison; on its own it proves no real cache hit on a backend.
    """
    # TODO 2: compute hit_rate_gain, ttft_delta_ms, overhead_delta.
    # hit_rate_gain = ???; ttft_delta_ms = ???; overhead_delta = ???.
    #         Gains and deltas point in different directions; baseline and candidate must share a workload.
