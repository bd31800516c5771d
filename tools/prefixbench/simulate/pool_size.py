"""How many KV blocks a request needs, and the smallest pool that serves a workload at all.

vLLM v1 gives a request ``cdiv(prompt + output - 1, block_size)`` blocks by its end (the last sampled token
gets no KV) and keeps one block of the pool as its null block, so a pool of ``N`` holds ``N - 1``; a request
that needs more is never scheduled (or is preempted over and over).
"""

from __future__ import annotations

from typing import Iterable

from ..core.errors import InputError


def blocks_needed(prompt_tokens: int, output_tokens: int, block_size: int) -> int:
    """Blocks one request holds at its end, alone."""
    return -(-(prompt_tokens + max(output_tokens, 1) - 1) // block_size)


def min_pool_blocks(sizes: Iterable[tuple[int, int, str]], block_size: int) -> tuple[int, str | None]:
    """The smallest pool (null block included) that fits each ``(prompt, output, id)`` alone, and the request
    that needs it."""
    need, which = 1, None
    for prompt, output, name in sizes:
        blocks = blocks_needed(prompt, output, block_size) + 1
        if blocks > need:
            need, which = blocks, name
    return need, which


def check_pool_fits(sizes: Iterable[tuple[int, int, str]], block_size: int, num_blocks: int, *, flag: str) -> int:
    """Refuse a pool too small for one request, naming ``flag`` and the minimum; return the minimum."""
    need, which = min_pool_blocks(sizes, block_size)
    if num_blocks < need:
        raise InputError(flag, f"a pool of {num_blocks} blocks of {block_size} tokens cannot hold request {which} "
                               f"alone (one block is vLLM's null block): give at least {need}")
    return need


def check_published_pool(asked: int | None, published: int | None, *, where: str = "the server") -> None:
    """Refuse a ``--kv-blocks`` that contradicts the pool the server publishes (``vllm:cache_config_info``
    ``num_gpu_blocks``): a prediction for the asked pool would model another cache. The one policy of every
    command that takes ``--kv-blocks``; a server that publishes no pool size is taken at its word."""
    if asked is not None and published is not None and published != asked:
        raise InputError("--kv-blocks", f"{where} reports num_gpu_blocks={published}, not {asked}: start it with "
                                        f"--num-gpu-blocks-override {asked} or drop --kv-blocks")
