"""prefixbench: does prefix caching pay off for this workload, and how do we know?

Data flow, one module per step:

    workload.py / traces.py  ->  cache.py (block model, policies)  ->  simulate.py (counts)
        ->  decision.py (summarize / compare / accept-tune-reject)  ->  cli.py (python -m tools.prefixbench)
"""

from .errors import InputError
from .cache import POLICIES, PrefixCache
from .simulate import BlockKeys, simulate_prefix_cache
from .decision import (
    compare_prefix_cache_to_baseline,
    recommend_prefix_cache_run,
    summarize_prefix_cache,
)

__all__ = [
    "InputError",
    "POLICIES",
    "PrefixCache",
    "BlockKeys",
    "simulate_prefix_cache",
    "summarize_prefix_cache",
    "compare_prefix_cache_to_baseline",
    "recommend_prefix_cache_run",
]
