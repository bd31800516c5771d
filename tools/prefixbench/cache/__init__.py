"""The block model: which KV blocks exist (``blocks``) and which of them a cache keeps (``prefix_cache``).

Layer 2, above ``core`` and ``workload`` (token ids): nothing here knows about servers or results.
"""

from .blocks import BlockKeys, max_hit_blocks
from .engine_pool import VLLM_VERSION_MODELLED, PoolExhausted, VllmBlockPool
from .prefix_cache import POLICIES, ROOT, PrefixCache, check_capacity, check_policy

__all__ = ["BlockKeys", "max_hit_blocks", "POLICIES", "ROOT", "PrefixCache", "check_capacity", "check_policy",
           "VLLM_VERSION_MODELLED", "PoolExhausted", "VllmBlockPool"]
