def recommend_prefix_cache_run(baseline: Dict[str, float], candidate: Dict[str, float], min_hit_rate: float, max_overhead: float) -> Dict[str, object]:
    """A teaching decision from hit rate, TTFT gain and maintenance overhead; return decision, reason, next_action.

    The rules (the one contract; Step 4's table agrees with it):
    - check the thresholds first, before baseline / candidate: min_hit_rate must be a number in [0, 1] and
      max_overhead a number >= 0 (float("inf") is allowed and means no limit; None, NaN, a bool or a string is not),
      else raise ValueError;
    - baseline / candidate are checked as in compare_prefix_cache_to_baseline (which gives the comparison);
    - the threshold applies to the gain hit_rate_gain = candidate − baseline, not to candidate's own hit_rate;
    - comparisons are plain float arithmetic, without tolerance: 0.7 − 0.2 = 0.49999999999999994 < 0.5, so a 0.5
      threshold is missed;
    - accept (next_action='promote_to_serving_eval'): hit_rate_gain >= min_hit_rate, ttft_delta_ms < 0 and
      overhead_delta <= max_overhead (meeting a threshold exactly passes);
    - tune ('refine_chunk_or_eviction_policy'): hit_rate_gain >= min_hit_rate and ttft_delta_ms < 0, but
      overhead_delta > max_overhead;
    - reject ('fallback_to_no_cache'): everything else: a gain below the threshold (even with a faster TTFT), or no
      faster TTFT (ttft_delta_ms >= 0, even with the hit rate passing);
    - reason is any non-empty string (its text is not graded); the returned dict may carry extra keys;
    - no argument is modified: baseline and candidate are the same after the call.
    min_hit_rate and max_overhead are this workload's thresholds, not universal constants; this function does not
    replace validation on a real backend.
    """
    # TODO 3: get the comparison first, then decide with min_hit_rate and max_overhead:
    # hit_rate_ok = ???; overhead_ok = ???; decision = ???; next_action = ???.
    #         accept / tune / reject, with reason and next_action.
    #         A hit rate below the threshold is never accepted for a faster TTFT alone; check the thresholds first.
