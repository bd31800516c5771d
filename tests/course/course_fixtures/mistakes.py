"""The mistake catalogue (issue 23): wrong answers a student plausibly writes, not reference tweaks for their own
sake. Each entry is a mutant of the reference solution that tests/course/content/test_mistake_catalogue.py runs
through the visible tests, the self-check (visible probes) and the hidden tests.

``named``: the self-check code it must get before grading (``None``: a visible test names it instead, by its
assert message). ``reason``: set when no visible check names it, saying why (then the test checks that honestly:
nothing visible fails). ``hidden``: the hidden cells that must fail (grading confirms it); empty only with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .variants import MISSING_AS_ZERO_COMPARE, MISSING_AS_ZERO_SUMMARIZE, REFERENCE

GRADE_ID = {"simulate": "ex0-simulate", "summarize": "ex1-summarize", "compare": "ex2-compare",
            "recommend": "ex3-recommend"}
FUNCTION = {"simulate": "simulate_prefix_cache", "summarize": "summarize_prefix_cache",
            "compare": "compare_prefix_cache_to_baseline", "recommend": "recommend_prefix_cache_run"}


@dataclass(frozen=True)
class Mutant:
    id: str
    exercise: str
    what: str
    swaps: tuple = ()
    """(old, new) replacements in the reference solution, in order (each ``old`` must occur)."""
    source: str = ""
    """A whole solution cell instead of swaps."""
    named: str | None = None
    visible_test: bool = False
    """A visible test cell fails for it (its assert message says what is wrong)."""
    hidden: frozenset = field(default_factory=frozenset)
    reason: str = ""

    def code(self) -> str:
        if self.source:
            return self.source
        text = REFERENCE[GRADE_ID[self.exercise]]
        for old, new in self.swaps:
            if old not in text:
                raise AssertionError(f"{self.id}: anchor not found: {old!r}")
            text = text.replace(old, new)
        return text


def wrapped(exercise: str, body: str) -> str:
    """The reference renamed ``_reference``, then a function of the exercise's name that calls it (``body`` is
    the wrapper's body, indented four spaces)."""
    name = FUNCTION[exercise]
    reference = re.sub(rf"^def {name}\(", "def _reference(", REFERENCE[GRADE_ID[exercise]], flags=re.M)
    signature = REFERENCE[GRADE_ID[exercise]].split("\n", 1)[0]
    return reference + "\n\n" + signature + "\n" + body


def _h(*ids: str) -> frozenset:
    return frozenset(ids)


B, K, E, O, S = "hidden-ex0-blocks", "hidden-ex0-keys", "hidden-ex0-eviction", "hidden-ex0-oracle", "hidden-ex0-speed"
SUM, CMP, DEC, THR = "hidden-ex1-summarize", "hidden-ex2-compare", "hidden-ex3-decision", "hidden-ex3-thresholds"

MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ simulate_prefix_cache (TODO 0)
    Mutant("sim.capacity_off_by_one", "simulate", "evicts one block late: len(cached) > capacity_blocks",
           (("if len(cached) >= capacity_blocks:", "if len(cached) > capacity_blocks:"),),
           named="capacity_off_by_one", visible_test=True, hidden=_h(E, O, S)),
    Mutant("sim.partial_block", "simulate", "cuts the trailing partial block like a full one",
           (("range(0, len(tokens) - block_size + 1, block_size)", "range(0, len(tokens), block_size)"),),
           named="partial_block_counted", visible_test=True, hidden=_h(B, O)),
    Mutant("sim.position_keys", "simulate", "keys a block by (position, content), not by its prefix",
           (("setdefault((parent, tuple(", "setdefault((start, tuple("),),
           named="position_keys", visible_test=True, hidden=_h(K, O)),
    Mutant("sim.hit_not_refreshed", "simulate", "a hit keeps its old LRU place (never pinned, never moved)",
           (("evictable.pop(key, None)  # pinned while this request runs", "pass"),),
           named="hit_not_refreshed", visible_test=True, hidden=_h(E, O, S)),
    Mutant("sim.head_first_release", "simulate", "releases a request's blocks head first",
           (("for key in reversed(held):", "for key in held:"),),
           named="head_first_eviction", hidden=_h(E, O)),
    Mutant("sim.evicts_most_recent", "simulate", "popitem() evicts the most recently used block (MRU)",
           (("evictable.popitem(last=False)", "evictable.popitem()"),),
           named="head_first_eviction", visible_test=True, hidden=_h(E, O, S)),
    Mutant("sim.empty_counted", "simulate", "counts an empty token list as a request",
           (("        if not tokens:\n            continue\n", ""),),
           visible_test=True, hidden=_h(B, O)),
    Mutant("sim.no_data_is_zero", "simulate", "a rate without data is 0.0, not None",
           (("if total_requests else None", "if total_requests else 0.0"),
            ("if total_prompt_tokens else None", "if total_prompt_tokens else 0.0")),
           visible_test=True, hidden=_h(B, O)),
    Mutant("sim.percent", "simulate", "rates in percent instead of fractions",
           (('"cache_hit_rate": hit_requests / total_requests', '"cache_hit_rate": 100 * hit_requests / total_requests'),),
           named="other", visible_test=True, hidden=_h(O)),
    Mutant("sim.integer_division", "simulate", "integer division for the token rate",
           (("reuse = reused_tokens / total_prompt_tokens", "reuse = reused_tokens // total_prompt_tokens"),),
           named="other", visible_test=True, hidden=_h(O)),
    Mutant("sim.no_stop_prefix_keys", "simulate", "no break at the first miss (with whole-prefix keys)",
           (("while hits < len(keys) and keys[hits] in cached:  # longest cached prefix; stop at the first miss\n"
             "            hits += 1",
             "hits = sum(1 for key in keys if key in cached)"),),
           reason="provably harmless with whole-prefix keys and an LRU that never strands a block: nothing after a "
                  "miss is ever cached, so every result is the reference's (test_no_stop_with_prefix_keys_is_harmless)"),
    Mutant("sim.trims_inputs", "simulate", "trims each prompt's partial tail in place (tokens.pop())",
           (("        total_prompt_tokens += len(tokens)\n",
             "        total_prompt_tokens += len(tokens)\n        while len(tokens) % block_size:\n"
             "            tokens.pop()\n"),),
           named="mutates_input", hidden=_h(B)),
    Mutant("sim.bool_size", "simulate", "accepts block_size=True as 1",
           (("if isinstance(value, bool) or not isinstance(value, int) or value <= 0:",
             "if not isinstance(value, int) or value <= 0:"),),
           visible_test=True, hidden=_h(B)),
    Mutant("sim.float_size", "simulate", "accepts capacity_blocks=2.0 (checks value <= 0 only)",
           (("if isinstance(value, bool) or not isinstance(value, int) or value <= 0:", "if value <= 0:"),),
           visible_test=True, hidden=_h(B)),
    Mutant("sim.cache_size_all_seen", "simulate", "cache_size_blocks counts every block ever seen",
           (('"cache_size_blocks": len(cached)', '"cache_size_blocks": len(block_ids)'),),
           named="other", visible_test=True, hidden=_h(E, O, S)),
    Mutant("sim.prefill_as_miss", "simulate", "prefill_work_reduction = the miss share",
           (('"prefill_work_reduction": reuse,', '"prefill_work_reduction": None if reuse is None else 1 - reuse,'),),
           named="other", visible_test=True, hidden=_h(O)),
    # ------------------------------------------------------------------ summarize_prefix_cache (TODO 1)
    Mutant("sum.sorts_in_place", "summarize", "runs.sort(...) then runs[0]",
           (("    best = max(runs, key=lambda run: run[\"hit_rate\"])  # max keeps the first of equals\n",
             "    runs.sort(key=lambda run: run[\"hit_rate\"], reverse=True)\n    best = runs[0]\n"),),
           named="mutates_input", visible_test=True, hidden=_h(SUM)),
    Mutant("sum.missing_as_zero", "summarize", ".get(key) or 0.0", source=MISSING_AS_ZERO_SUMMARIZE,
           named="missing_metric_as_zero", hidden=_h(SUM)),
    Mutant("sum.empty_as_zero", "summarize", "an empty list averages to 0.0",
           (('return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None,',
             'return {"run_count": 0, "avg_hit_rate": 0.0, "avg_ttft_ms": 0.0,'),),
           named="missing_metric_as_zero", visible_test=True),
    Mutant("sum.last_of_ties", "summarize", "ties go to the last run",
           (("best = max(runs, key=", "best = max(reversed(runs), key="),),
           reason="a visible tie would state the tie rule's answer outright; the docstring states it (first of "
                  "equals) and a hidden test and a hidden probe check it", hidden=_h(SUM)),
    Mutant("sum.min_not_max", "summarize", "min instead of max", (("best = max(runs", "best = min(runs"),),
           named="other", visible_test=True, hidden=_h(SUM)),
    Mutant("sum.percent", "summarize", "avg_hit_rate in percent",
           (('"avg_hit_rate": sum(run["hit_rate"] for run in runs) / len(runs)',
             '"avg_hit_rate": 100 * sum(run["hit_rate"] for run in runs) / len(runs)'),),
           named="other", visible_test=True, hidden=_h(SUM)),
    Mutant("sum.integer_division", "summarize", "// for the means",
           (('for run in runs) / len(runs)', 'for run in runs) // len(runs)'),),
           named="other", visible_test=True, hidden=_h(SUM)),
    Mutant("sum.no_range_check", "summarize", "hit_rate outside [0, 1] accepted",
           (('or not 0 <= run["hit_rate"] <= 1', ''),),
           named="invalid_value_accepted", hidden=_h(SUM)),
    Mutant("sum.bool_metric", "summarize", "hit_rate=True accepted as 1",
           (('if isinstance(run["hit_rate"], bool) or not isinstance', 'if not isinstance'),),
           named="invalid_value_accepted",
           hidden=_h(SUM)),
    Mutant("sum.nan_ttft", "summarize", "NaN ttft_ms accepted (ttft_ms < 0 test)",
           (('or not run["ttft_ms"] >= 0', 'or run["ttft_ms"] < 0'),),
           named="invalid_value_accepted", hidden=_h(SUM)),
    Mutant("sum.workload_unchecked", "summarize", "workload_id never compared",
           (('for key in ("workload_id", "hit_rate_unit"):', 'for key in ("hit_rate_unit",):'),),
           named="mixed_workloads_accepted",
           hidden=_h(SUM)),
    Mutant("sum.best_is_the_run", "summarize", "best_hit_rate_run is the run dict, not its name",
           (('"best_hit_rate_run": best["name"]', '"best_hit_rate_run": best'),),
           named="other", visible_test=True, hidden=_h(SUM)),
    # ------------------------------------------------------------------ compare_prefix_cache_to_baseline (TODO 2)
    Mutant("cmp.ttft_sign", "compare", "ttft_delta_ms = baseline - candidate (\"saved ms\")",
           (('candidate["ttft_ms"] - baseline["ttft_ms"]', 'baseline["ttft_ms"] - candidate["ttft_ms"]'),),
           named="wrong_delta_sign", visible_test=True, hidden=_h(CMP, DEC)),
    Mutant("cmp.hit_sign", "compare", "hit_rate_gain = baseline - candidate",
           (('candidate["hit_rate"] - baseline["hit_rate"]', 'baseline["hit_rate"] - candidate["hit_rate"]'),),
           named="wrong_delta_sign", visible_test=True, hidden=_h(CMP, DEC)),
    Mutant("cmp.overhead_sign", "compare", "overhead_delta = baseline - candidate",
           (('candidate["overhead"] - baseline["overhead"]', 'baseline["overhead"] - candidate["overhead"]'),),
           named="wrong_delta_sign", visible_test=True, hidden=_h(CMP, DEC)),
    Mutant("cmp.missing_as_zero", "compare", ".get(key) or 0.0", source=MISSING_AS_ZERO_COMPARE,
           named="missing_metric_as_zero", hidden=_h(CMP, THR)),
    Mutant("cmp.default_zero", "compare", "run.get(key, 0.0): missing read as 0, None still refused",
           (("value = run.get(key)", "value = run.get(key, 0.0)"),),
           named="missing_metric_as_zero", hidden=_h(CMP, THR)),
    Mutant("cmp.workload_unchecked", "compare", "workload_id / hit_rate_unit never compared",
           (('for key in ("workload_id", "hit_rate_unit"):', 'for key in ():'),),
           named="mixed_workloads_accepted", hidden=_h(CMP)),
    Mutant("cmp.percent_gain", "compare", "hit_rate_gain in percentage points",
           (('"hit_rate_gain": candidate["hit_rate"] - baseline["hit_rate"]',
             '"hit_rate_gain": 100 * (candidate["hit_rate"] - baseline["hit_rate"])'),),
           named="other", visible_test=True, hidden=_h(CMP, DEC)),
    Mutant("cmp.ratio_ttft", "compare", "ttft_delta_ms as a ratio",
           (('candidate["ttft_ms"] - baseline["ttft_ms"]', 'candidate["ttft_ms"] / baseline["ttft_ms"]'),),
           named="other", visible_test=True, hidden=_h(CMP, DEC)),
    Mutant("cmp.abs_delta", "compare", "abs() of the TTFT delta",
           (('"ttft_delta_ms": candidate["ttft_ms"] - baseline["ttft_ms"]',
             '"ttft_delta_ms": abs(candidate["ttft_ms"] - baseline["ttft_ms"])'),),
           named="wrong_delta_sign", visible_test=True, hidden=_h(CMP, DEC)),
    Mutant("cmp.no_range_check", "compare", "hit_rate outside [0, 1] accepted",
           (('if not 0 <= run["hit_rate"] <= 1:', 'if False:'),),
           named="invalid_value_accepted", hidden=_h(CMP)),
    Mutant("cmp.nan_accepted", "compare", "NaN accepted as a number",
           ((" or value != value:", ":"),),
           named="invalid_value_accepted", hidden=_h(CMP)),
    Mutant("cmp.bool_accepted", "compare", "overhead=False accepted as 0",
           (("if isinstance(value, bool) or not isinstance(value, (int, float))",
             "if not isinstance(value, (int, float))"),),
           named="invalid_value_accepted", hidden=_h(CMP)),
    Mutant("cmp.writes_candidate", "compare", "writes the deltas into candidate",
           source=wrapped("compare", "    result = _reference(baseline, candidate)\n    candidate.update(result)\n"
                                     "    return result\n"),
           named="mutates_input", visible_test=True, hidden=_h(CMP, DEC)),
    # ------------------------------------------------------------------ recommend_prefix_cache_run (TODO 3)
    Mutant("rec.tune_without_ttft", "recommend", "elif hit_rate_ok: tune even when TTFT is not faster",
           (("elif hit_rate_ok and ttft_improved:", "elif hit_rate_ok:"),),
           named="tune_without_ttft_gain", visible_test=True, hidden=_h(DEC)),
    Mutant("rec.ttft_only", "recommend", "no hit-rate gate",
           (('hit_rate_ok = comparison["hit_rate_gain"] >= min_hit_rate', "hit_rate_ok = True"),),
           named="ttft_only_accept", visible_test=True, hidden=_h(DEC)),
    Mutant("rec.candidate_hit_rate", "recommend", "gates candidate's own hit_rate, not the gain",
           (('hit_rate_ok = comparison["hit_rate_gain"] >= min_hit_rate',
             'hit_rate_ok = candidate["hit_rate"] >= min_hit_rate'),),
           visible_test=True, hidden=_h(DEC)),
    Mutant("rec.strict_gain", "recommend", "gain > min_hit_rate (a gain exactly at the threshold fails)",
           (('comparison["hit_rate_gain"] >= min_hit_rate', 'comparison["hit_rate_gain"] > min_hit_rate'),),
           reason="a visible exact-threshold case would state the boundary's answer; the docstring states it "
                  "(>=) and hidden-ex3-decision checks it", hidden=_h(DEC)),
    Mutant("rec.strict_overhead", "recommend", "overhead_delta < max_overhead",
           (('comparison["overhead_delta"] <= max_overhead', 'comparison["overhead_delta"] < max_overhead'),),
           reason="as for the gain's boundary: stated (<=), checked by hidden-ex3-decision", hidden=_h(DEC)),
    Mutant("rec.ttft_not_strict", "recommend", "ttft_delta_ms <= 0 counts as faster",
           (('ttft_improved = comparison["ttft_delta_ms"] < 0', 'ttft_improved = comparison["ttft_delta_ms"] <= 0'),),
           reason="an equal TTFT is stated as reject; hidden-ex3-decision checks it", hidden=_h(DEC)),
    Mutant("rec.unchecked_thresholds", "recommend", "thresholds used as given",
           (("if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:",
             "if False:"),),
           named="unchecked_thresholds", hidden=_h(THR)),
    Mutant("rec.nan_threshold", "recommend", "NaN passes `value < low or value > high`",
           (("or not low <= value <= high:", "or value < low or value > high:"),),
           named="unchecked_thresholds",
           hidden=_h(THR)),
    Mutant("rec.wrong_action", "recommend", "tune's next_action is the reject one",
           (('"tune": "refine_chunk_or_eviction_policy"', '"tune": "fallback_to_no_cache"'),),
           named="other", visible_test=True, hidden=_h(DEC)),
    Mutant("rec.empty_reason", "recommend", "an empty reason for accept",
           (('decision, reason = "accept", "命中率增益、TTFT 收益和维护开销都达标"', 'decision, reason = "accept", ""'),),
           named="other", visible_test=True, hidden=_h(DEC)),
    Mutant("rec.overhead_ignored", "recommend", "overhead never checked (no tune)",
           (('overhead_ok = comparison["overhead_delta"] <= max_overhead', "overhead_ok = True"),),
           named="other", visible_test=True, hidden=_h(DEC)),
    Mutant("rec.tolerance", "recommend", "a 1e-9 tolerance on the gain",
           (('comparison["hit_rate_gain"] >= min_hit_rate', 'comparison["hit_rate_gain"] >= min_hit_rate - 1e-9'),),
           visible_test=True, hidden=_h(DEC)),
    Mutant("rec.writes_candidate", "recommend", "stores the decision in candidate",
           source=wrapped("recommend", "    result = _reference(baseline, candidate, min_hit_rate, max_overhead)\n"
                                       "    candidate[\"decision\"] = result[\"decision\"]\n    return result\n"),
           named="mutates_input", visible_test=True, hidden=_h(DEC)),
)
