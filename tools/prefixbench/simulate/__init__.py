"""Layer 3, simulation: counts from the block model.

- ``sequences``: token-id prompts through the simulator (``simulate_prefix_cache``);
- ``replay``: Mooncake traces;
- ``predict``: what a server's counters should show, and the one exactness rule;
- ``targets``: what an asked-for hit rate becomes under a block cache's rules;
- ``block_events``: the engine model's KV events against the ones a server published;
- ``attribution``: why each request hit what it did;
- ``plan`` and ``pool_size``: capacity planning;
- ``routing``: simulated replicas and placement policies;
- ``placement``: the best placement as a yardstick for a router's (or a client's) placement;
- ``timeline``: overlapping requests stepped as vLLM's scheduler steps them;
- ``overlap``: overlapping requests as a client saw them, replayed on that timeline;
- ``overlap_events``: the server's KV events against the timeline replay, per block and per request.
"""

from .sequences import ratio, simulate_prefix_cache

__all__ = ["ratio", "simulate_prefix_cache"]
