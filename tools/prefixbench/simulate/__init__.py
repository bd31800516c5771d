"""Layer 3, simulation: counts from the block model. ``sequences`` (token-id prompts), ``replay`` (Mooncake
traces), ``predict`` (what a server's counters should show, and the one exactness rule), ``targets`` (what an
asked-for hit rate becomes under a block cache's rules)."""

from .sequences import ratio, simulate_prefix_cache

__all__ = ["ratio", "simulate_prefix_cache"]
