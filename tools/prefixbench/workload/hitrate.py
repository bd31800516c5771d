"""The hit-rate benchmark's workload: a known shared ratio (or the user's own token-id file) and its distinct
prefixes for the prefill phase.

What the asked-for target becomes under a real cache's rules is ``simulate.targets``; this module only builds
the requests and says what was asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core.errors import InputError, require_int, require_number
from .files import load_workload
from .generate import Workload, generate_shared_prefix_workload

GROUP_KEY_TOKENS = 16
"""Without ``prefix_group`` fields, prompts that agree on their first this-many tokens form one prefix group."""


@dataclass(frozen=True)
class HitrateWorkload:
    """A hit-rate run's workload: the ``workload.generate.Workload`` it comes from (generated, or a user's file,
    whose ``workload_id`` names it as g0g1's does), the requests the run sends (the file's first
    ``--num-requests``, with ``--output-len`` applied), the distinct prefixes its prefill phase sends, and what
    was asked: the target hit rate and where it comes from. ``input_len`` / ``prefix_len`` are ``None`` for a
    user's file (its prompts decide them)."""

    workload: Workload
    requests: list[dict]
    prefixes: list[list[int]]
    target_hit_rate: float | None
    target_basis: str
    input_len: int | None
    prefix_len: int | None
    prefix_num: int

    @property
    def generated(self) -> bool:
        """Built from ``--hit-rate`` / ``--prefix-len`` (a known target), not read from a file."""
        return self.input_len is not None

    @property
    def source(self) -> str:
        """``generated``, or the file's path (the result's ``config.workload``)."""
        return "generated" if self.generated else self.workload.source

    @property
    def workload_id(self) -> str:
        return self.workload.workload_id


def generated_workload(*, num_requests: int, input_len: int, hit_rate: float | None, prefix_len: int | None,
                       prefix_num: int, output_len: int, seed: int = 0) -> HitrateWorkload:
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
    return HitrateWorkload(
        workload=workload, requests=workload.requests,
        prefixes=[p for p in prefixes if p],
        target_hit_rate=hit_rate if hit_rate is not None else prefix_len / input_len,
        target_basis="--hit-rate" if hit_rate is not None else "--prefix-len / --input-len",
        input_len=input_len, prefix_len=prefix_len, prefix_num=prefix_num)


def file_workload(path: str, *, num_requests: int | None, output_len: int | None) -> HitrateWorkload:
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
    return HitrateWorkload(
        workload=workload, requests=requests, prefixes=prefixes,
        target_hit_rate=shared / total if total else None,
        target_basis="shared-prefix tokens / prompt tokens of the file (prefixes derived from it)",
        input_len=None, prefix_len=None, prefix_num=len(prefixes))


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
