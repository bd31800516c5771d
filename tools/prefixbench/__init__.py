"""prefixbench: does prefix caching pay off for this workload, and how do we know?

Packages by layer; data flows one way, and a module imports only from layers below its own
(``tests/prefixbench/test_layers.py`` fails on a violation):

    core  ->  workload  ->  cache  ->  simulate  ->  serve  ->  measure  ->  evidence  ->  decision
          ->  run  ->  report  ->  cli

- ``core``: errors, atomic files, paths, provenance, process trees, progress bars, the typed result records
- ``workload``: token-id workloads (generated, files, hit-rate targets, Mooncake traces)
- ``cache``: the block model (chained block keys, the prefix cache and its eviction policies)
- ``simulate``: counts (prompts, trace replay), the prediction of a server's counters, target breakdowns
- ``serve`` / ``measure``: a real vLLM server and what is measured against it (client, Prometheus, memory)
- ``evidence``: the measured hit rate and where it comes from, or null and why
- ``decision``: the chapter's accept / tune / reject, the G0 / G1 summary, the hit-rate verdict
- ``run``: the G0 / G1 experiment and the hit-rate mode, as short steps
- ``report`` / ``cli``: tables, Markdown, plots, files; the ``prefixbench`` command

This module and ``traces`` are the public face that notebooks import; nothing inside the layers imports them.
"""

from .cache import POLICIES, BlockKeys, PrefixCache
from .core.errors import InputError
from .decision import compare_prefix_cache_to_baseline, recommend_prefix_cache_run, summarize_prefix_cache
from .simulate import simulate_prefix_cache

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
