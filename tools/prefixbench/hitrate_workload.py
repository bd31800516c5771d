"""The hit-rate benchmark's workload: a known shared ratio (or the user's own token-id file), its distinct prefixes
for the prefill phase, and what the requested target becomes once a real cache's rules apply.

Why a module of its own: the "target" a user asks for (prefix length / input length) is not what any server can
reuse. A cache keeps whole blocks only, never reuses the last prompt token, and misses the first request of each
prefix unless it was prefilled. ``target_breakdown`` turns the request into the number a correct server must
show and says how much each rule takes away, so a gap between target and measured is explained, not hidden.
"""

from __future__ import annotations

from typing import Sequence

from .errors import InputError, require_int, require_number
from .workload import generate_shared_prefix_workload, load_workload

GROUP_KEY_TOKENS = 16
"""Without ``prefix_group`` fields, prompts that agree on their first this-many tokens form one prefix group."""


def generated_workload(*, num_requests: int, input_len: int, hit_rate: float | None, prefix_len: int | None,
                       prefix_num: int, output_len: int, seed: int = 0) -> dict:
    """Requests that share one of ``prefix_num`` prefixes (round robin) and a unique suffix each.

    ``hit_rate`` is turned into ``prefix_len = round(hit_rate * input_len)`` tokens (the seed's definition).
    """
    if (hit_rate is None) == (prefix_len is None):
        raise InputError("--hit-rate", "give exactly one of --hit-rate or --prefix-len")
    input_len = require_int("--input-len", input_len, minimum=1)
    if hit_rate is not None:
        hit_rate = require_number("--hit-rate", hit_rate, low=0.0, high=1.0)
        prefix_len = round(hit_rate * input_len)
    prefix_len = require_int("--prefix-len", prefix_len, minimum=0)
    if prefix_len > input_len:
        raise InputError("--prefix-len", f"must be <= --input-len ({input_len}), got {prefix_len}")
    workload = generate_shared_prefix_workload(num_requests, input_len, prefix_len=prefix_len,
                                               num_prefixes=prefix_num, output_len=output_len, seed=seed)
    prefixes = []
    for group in range(min(prefix_num, num_requests)):
        first = next(r for r in workload.requests if r["prefix_group"] == group)
        prefixes.append(first["prompt_token_ids"][:prefix_len])
    return {
        "source": "generated", "workload_id": workload.workload_id, "requests": workload.requests,
        "prefixes": [p for p in prefixes if p],
        "target_hit_rate": hit_rate if hit_rate is not None else prefix_len / input_len,
        "target_basis": "--hit-rate" if hit_rate is not None else "--prefix-len / --input-len",
        "input_len": input_len, "prefix_len": prefix_len, "prefix_num": prefix_num,
    }


def file_workload(path: str, *, num_requests: int | None, output_len: int | None) -> dict:
    """A user's JSONL of token-id prompts (``workload.load_workload`` format), with its prefixes derived.

    Prefix groups come from ``prefix_group`` when the lines carry it, otherwise from the first
    ``GROUP_KEY_TOKENS`` tokens; a group's prefix is the longest common prefix of its distinct prompts (a group
    of one distinct prompt has none: prefilling a whole prompt would turn its repeat into a full hit).
    """
    workload = load_workload(path)
    requests = workload.requests
    if num_requests is not None:
        if num_requests > len(requests):
            raise InputError("--num-requests", f"{path} has only {len(requests)} requests, asked for {num_requests}")
        requests = requests[:num_requests]
    if output_len is not None:
        requests = [{**r, "max_tokens": output_len} for r in requests]
    prefixes = derive_prefixes(requests)
    total = sum(len(r["prompt_token_ids"]) for r in requests)
    shared = sum(_shared_len(r["prompt_token_ids"], prefixes) for r in requests)
    return {
        "source": str(path), "workload_id": workload.workload_id, "requests": requests, "prefixes": prefixes,
        "target_hit_rate": shared / total if total else None,
        "target_basis": "shared-prefix tokens / prompt tokens of the file (prefixes derived from it)",
        "input_len": None, "prefix_len": None, "prefix_num": len(prefixes),
    }


def derive_prefixes(requests: Sequence[dict]) -> list[list[int]]:
    groups: dict[object, list[list[int]]] = {}
    for r in requests:
        ids = r["prompt_token_ids"]
        key = ("group", r["prefix_group"]) if r.get("prefix_group") is not None else ("head", tuple(ids[:GROUP_KEY_TOKENS]))
        members = groups.setdefault(key, [])
        if ids not in members:
            members.append(ids)
    prefixes = []
    for members in groups.values():
        if len(members) < 2:
            continue
        common = _common_prefix_len(members)
        if common:
            prefixes.append(members[0][:common])
    return prefixes


def _common_prefix_len(prompts: Sequence[Sequence[int]]) -> int:
    first = prompts[0]
    n = min(len(p) for p in prompts)
    for other in prompts[1:]:
        i = 0
        while i < n and other[i] == first[i]:
            i += 1
        n = i
    return n


def _shared_len(prompt: Sequence[int], prefixes: Sequence[Sequence[int]]) -> int:
    return max((len(p) for p in prefixes if len(p) <= len(prompt) and list(prompt[:len(p)]) == list(p)), default=0)


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
