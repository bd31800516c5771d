"""Layer 7, decisions: the chapter's summary / comparison / accept-tune-reject (``chapter``), the G0 / G1 paired
summary (``paired``), the hit-rate mode's verdict (``verdict``) and the speed-up bound (``speedup``).

``from tools.prefixbench import decision`` then ``decision.summarize_prefix_cache(...)`` is the course
notebook's public face.
"""

from .chapter import DECISIONS, compare_prefix_cache_to_baseline, recommend_prefix_cache_run, summarize_prefix_cache

__all__ = ["DECISIONS", "compare_prefix_cache_to_baseline", "recommend_prefix_cache_run", "summarize_prefix_cache"]
