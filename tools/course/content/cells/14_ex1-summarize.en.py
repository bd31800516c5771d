def summarize_prefix_cache(runs: List[Dict[str, float]]) -> Dict[str, object]:
    """Summarise cache runs on one request distribution.

    Return run_count, avg_hit_rate, avg_ttft_ms (plain means) and best_hit_rate_run (the name of the run with the
    highest hit rate; on a tie, the first one). The rules (the one contract; grading checks only these):
    - runs must be a list, else raise TypeError; each item must be a dict, else raise ValueError;
    - an empty list gives the empty summary: run_count 0 and the other three fields None (no performance claim);
    - each run must have name, hit_rate and ttft_ms: a missing or None one raises ValueError; never read it
      silently as a measured 0; name may be any value but None (its type is not checked, nor whether it is empty);
    - hit_rate and ttft_ms must be numbers (int or float; a bool or a string is not), hit_rate in [0, 1] (both
      ends included) and ttft_ms >= 0, else raise ValueError; NaN is outside every range and raises ValueError;
      ttft_ms=float("inf") is accepted; other fields (overhead, for example) are not checked;
    - only runs of one workload and one hit-rate unit can be summarised: when the runs' workload_id or hit_rate_unit
      differ, raise ValueError; a missing field and an explicit None count as the same value. hit_rate_unit is
      "token", "block" or "request" (Step 3's three units), but the value itself is not checked: an unknown one is
      only compared with the others;
    - no argument is modified: the order of runs and every dict in it are the same after the call (no
      runs.sort(...); use max or sorted);
    - comparisons and means are plain Python arithmetic, without tolerance.
    """
    # TODO 1: compute run_count, avg_hit_rate, avg_ttft_ms, best_hit_rate_run.
    # run_count = ???; avg_hit_rate = ???; avg_ttft_ms = ???; best_hit_rate_run = ???.
    #         Never read a missing hit_rate or ttft_ms as a measured 0; an empty list gives the empty summary.
