"""What a hit-rate target becomes once a real cache's rules apply, rule by rule.

Why: the "target" a user asks for (prefix length / input length) is not what any server can reuse. A cache keeps
whole blocks only, never reuses the last prompt token, and misses the first request of each prefix unless it was
prefilled. ``target_breakdown`` turns the request into the number a correct server must show and says how much
each rule takes away, so a gap between target and measured is explained, not hidden.
"""

from __future__ import annotations


def target_breakdown(*, target: float | None, prefix_len: int | None, input_len: int | None, block_size: int | None,
                     prefill: bool, prefix_num: int, num_requests: int) -> dict:
    """What the asked-for target becomes under a block cache, step by step (generated workloads only).

    ``block_aligned_hit_rate`` is the rate a correct cache shows for this workload when every prefix is already
    cached: ``min(floor(prefix_len / B), floor((input_len - 1) / B)) * B / input_len``. Without prefill the first
    request of each prefix misses too (``expected_hit_rate``). The steps say how many points each rule takes.
    """
    if target is None or prefix_len is None or input_len is None:
        return {"available": False,
                "reason": "a workload file asks for no target: its target is the share of prompt tokens in derived "
                          "shared prefixes, and the predicted rate applies the cache's rules to it (whole blocks, "
                          "last token, first use of each prefix)"}
    if not block_size:
        return {"available": False, "reason": "the server's block size is unknown (pass --block-size)"}
    steps = []
    token_rate = prefix_len / input_len
    if abs(token_rate - target) > 1e-12:
        steps.append({"rule": "whole tokens", "points": (token_rate - target) * 100,
                      "explanation": f"{target:g} x {input_len} = {target * input_len:g} tokens, rounded to a "
                                     f"{prefix_len}-token prefix"})
    full_blocks = prefix_len // block_size
    partial = prefix_len - full_blocks * block_size
    aligned = full_blocks * block_size
    if partial:
        steps.append({"rule": "whole blocks", "points": -partial / input_len * 100,
                      "explanation": f"the prefix is {full_blocks} blocks of {block_size} tokens ({aligned}) plus "
                                     f"{partial} tokens in a partial block, which no cache keeps: those are "
                                     "recomputed by every request"})
    limit_blocks = (input_len - 1) // block_size
    if full_blocks > limit_blocks:
        lost = (full_blocks - limit_blocks) * block_size
        aligned = limit_blocks * block_size
        steps.append({"rule": "last token", "points": -lost / input_len * 100,
                      "explanation": f"the last prompt token is always recomputed, so a {input_len}-token prompt "
                                     f"can reuse at most {limit_blocks} blocks; {lost} more tokens are recomputed"})
    per_request = aligned / input_len
    served = min(prefix_num, num_requests) if aligned else 0
    expected = per_request
    if not prefill and served:
        expected = aligned * (num_requests - served) / (input_len * num_requests)
        steps.append({"rule": "cold prefixes", "points": (expected - per_request) * 100,
                      "explanation": f"without prefill the first request of each of the {served} prefixes finds "
                                     "nothing cached"})
    return {"available": True, "target_hit_rate": target, "prefix_len": prefix_len, "input_len": input_len,
            "block_size": block_size, "cacheable_prefix_tokens": aligned,
            "block_aligned_hit_rate": per_request, "expected_hit_rate": expected, "steps": steps}
