"""Seeded shared-prefix workloads as token ids, and the ``Workload`` record every workload source produces.

Prompts are token ids, not text, so every request that shares a prefix shares it exactly: there is no
re-tokenisation drift between the workload, the simulator's prediction and what the server sees.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass

from ..core.bounds import PROMPT_TOKENS, REQUESTS, WORKLOAD_TOKENS
from ..core.errors import InputError, require_int, require_number

DEFAULT_VOCAB = (10, 1000)
"""Token ids are drawn from [10, 1000): valid for the project's own small models and for any real LLM."""

DEFAULT_WORKLOAD_ARGS = dict(
    num_requests=20, input_len=1324, prefix_len=1024, num_prefixes=2, output_len=64, exact_repeats=0, seed=0)
"""The parameters of benchmarks/workloads/prefix_reuse.jsonl (regenerate with ``python -m tools.prefixbench
workload``): 1324-token prompts that share one of two 1024-token prefixes."""


@dataclass(frozen=True)
class Workload:
    requests: list[dict]
    source: str = "<generated>"

    @property
    def prompts(self) -> list[list[int]]:
        return [r["prompt_token_ids"] for r in self.requests]

    @property
    def workload_id(self) -> str:
        """Content hash of the prompts and output lengths: two runs are comparable only if this matches."""
        digest = hashlib.sha256()
        for request in self.requests:
            digest.update(json.dumps([request["prompt_token_ids"], request["max_tokens"]]).encode())
        return digest.hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.requests)


def generate_shared_prefix_workload(
    num_requests: int,
    input_len: int,
    *,
    prefix_len: int | None = None,
    shared_ratio: float | None = None,
    num_prefixes: int = 1,
    output_len: int = 64,
    exact_repeats: int = 0,
    seed: int = 0,
    vocab: tuple[int, int] = DEFAULT_VOCAB,
) -> Workload:
    """Requests of ``input_len`` tokens: one of ``num_prefixes`` shared prefixes (assigned round robin)
    followed by a unique random suffix. Give the prefix as ``prefix_len`` tokens or as ``shared_ratio`` of
    the input (rounded to whole tokens). ``exact_repeats`` of the requests are verbatim copies of an earlier
    one, placed at seeded random positions."""
    num_requests = REQUESTS.check("num_requests", num_requests)
    input_len = PROMPT_TOKENS.check("input_len", input_len)
    if num_requests * input_len > WORKLOAD_TOKENS:
        raise InputError("input_len", f"{num_requests} requests x {input_len} tokens is more than the "
                                      f"{WORKLOAD_TOKENS:_} tokens a generated workload may hold")
    num_prefixes = require_int("num_prefixes", num_prefixes, minimum=1)
    output_len = require_int("output_len", output_len, minimum=1)
    exact_repeats = require_int("exact_repeats", exact_repeats, minimum=0)
    seed = require_int("seed", seed)
    if (prefix_len is None) == (shared_ratio is None):
        raise InputError("prefix_len", "give exactly one of prefix_len or shared_ratio")
    if shared_ratio is not None:
        prefix_len = round(require_number("shared_ratio", shared_ratio, low=0.0, high=1.0) * input_len)
    prefix_len = require_int("prefix_len", prefix_len, minimum=0)
    if prefix_len > input_len:
        raise InputError("prefix_len", f"must be <= input_len ({input_len}), got {prefix_len}")
    if exact_repeats >= num_requests:
        raise InputError("exact_repeats", f"must be < num_requests ({num_requests}), got {exact_repeats}")
    low, high = vocab if isinstance(vocab, (tuple, list)) and len(vocab) == 2 else (None, None)
    if not (type(low) is int and type(high) is int and 0 <= low < high):
        raise InputError("vocab", f"must be (low, high) with 0 <= low < high, got {vocab!r}")

    rng = random.Random(seed)
    prefixes = [[rng.randrange(low, high) for _ in range(prefix_len)] for _ in range(num_prefixes)]
    repeat_at = set(rng.sample(range(1, num_requests), exact_repeats)) if exact_repeats else set()
    requests: list[dict] = []
    unique = 0
    for index in range(num_requests):
        if index in repeat_at:
            original = requests[rng.randrange(len(requests))]
            request = dict(original, id=f"r{index:05d}", repeat_of=original["id"])
        else:
            group = unique % num_prefixes
            suffix = [rng.randrange(low, high) for _ in range(input_len - prefix_len)]
            request = {"id": f"r{index:05d}", "prompt_token_ids": prefixes[group] + suffix,
                       "max_tokens": output_len, "prefix_group": group}
            unique += 1
        requests.append(request)
    return Workload(requests)
