"""Seeded conformance cases: a pool, scheduler settings and requests with their arrival steps and outputs.

A case is plain data, so a failing one can be printed as a test (``Case.literal``) and replayed anywhere. Token ids
are chosen by the case (the fake model runner returns ``outputs``), so multi-turn prompts can carry an earlier
request's generated tokens exactly as a chat client resends them.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, replace

MODES = ("sequential", "reset", "chunked", "async", "serial_queue", "concurrent", "preemption")
"""``sequential``: each request arrives when the engine is idle; ``reset``: the same with ``reset_prefix_cache``
between some requests; ``chunked``: a token budget smaller than the prompts; ``async``: vLLM's ``AsyncScheduler``
(the GPU default); ``concurrent``: staggered arrivals while others run (``max_num_seqs`` 2-4);
``serial_queue``: the same arrivals with ``max_num_seqs=1``, so requests queue and run one at a time;
``preemption``: staggered arrivals on a pool barely larger than the largest request, so vLLM preempts."""
VOCAB = (10, 1000)


@dataclass(frozen=True)
class CaseRequest:
    prompt: tuple[int, ...]
    outputs: tuple[int, ...]
    """The token ids the fake model runner samples, in order; ``len(outputs)`` is ``max_tokens``."""
    arrival: int | None = None
    """The engine step before which the request is added; ``None``: when the engine is idle (sequential)."""
    reset_before: bool = False
    """``reset_prefix_cache`` once the engine is idle, before this request is added."""


@dataclass(frozen=True)
class Case:
    mode: str
    seed: int
    block_size: int
    num_blocks: int
    """vLLM's ``num_gpu_blocks``: the null block included."""
    max_num_seqs: int = 8
    max_num_batched_tokens: int = 4096
    requests: tuple[CaseRequest, ...] = field(default_factory=tuple)

    @property
    def async_scheduling(self) -> bool:
        return self.mode == "async"

    @property
    def sequential(self) -> bool:
        return all(r.arrival is None for r in self.requests)

    def literal(self) -> str:
        """The case as Python source that rebuilds it (for a pasted reproduction)."""
        fields = asdict(self)
        fields["requests"] = tuple(CaseRequest(**r) for r in fields["requests"])
        return repr(replace(self, **fields))


def blocks_for(request: CaseRequest, block_size: int) -> int:
    """Blocks one request holds at its end (prompt + all outputs but the last get KV), plus the null block."""
    return -(-(len(request.prompt) + len(request.outputs) - 1) // block_size) + 1


def _tokens(rng: random.Random, n: int) -> tuple[int, ...]:
    return tuple(rng.randrange(*VOCAB) for _ in range(n))


def _requests(rng: random.Random, block_size: int, count: int) -> list[CaseRequest]:
    """Shared prefixes (aligned or not), multi-turn growth on earlier outputs, exact repeats, unique tails."""
    prefixes = [_tokens(rng, rng.choice([block_size, 2 * block_size, rng.randrange(1, 4 * block_size)]))
                for _ in range(rng.randint(1, 4))]
    made: list[CaseRequest] = []
    for _ in range(count):
        kind = rng.random()
        outputs = _tokens(rng, rng.randint(1, 64 if block_size <= 16 else 24))
        if made and kind < 0.15:
            made.append(replace(rng.choice(made), outputs=outputs))
            continue
        if made and kind < 0.4:
            turn = rng.choice(made)
            prompt = turn.prompt + turn.outputs + _tokens(rng, rng.randint(1, 2 * block_size))
        else:
            prompt = rng.choice(prefixes) + _tokens(rng, rng.randint(1, 3 * block_size))
        made.append(CaseRequest(prompt[:6 * block_size], outputs))
    return made


def make_case(mode: str, seed: int, count: int = 12) -> Case:
    """One seeded case of ``mode``: block size 16 or 128, a pool from one request's minimum to no eviction."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    rng = random.Random(f"{mode}:{seed}")
    block_size = rng.choice([16, 16, 128])
    requests = _requests(rng, block_size, count)
    largest = max(blocks_for(r, block_size) for r in requests)
    unbounded = sum(blocks_for(r, block_size) - 1 for r in requests) + 1
    concurrent = mode in ("concurrent", "serial_queue", "preemption")
    floor = largest * (4 if mode == "concurrent" else 1)
    num_blocks = rng.choice([floor, floor + rng.randrange(0, 8), max(floor, unbounded)])
    if mode == "preemption":
        num_blocks = largest + rng.randrange(0, largest + 1)
    max_seqs = {"concurrent": rng.randint(2, 4), "preemption": rng.randint(2, 4), "serial_queue": 1}.get(mode, 8)
    budget = rng.randint(11, 300) if mode == "chunked" else 4096
    if mode == "reset":
        requests = [replace(r, reset_before=rng.random() < 0.25) for r in requests]
    if concurrent:
        step = 0
        for i, r in enumerate(requests):
            step += rng.choice([0, 0, 1, 2, 3, 5, 8])
            requests[i] = replace(r, arrival=step)
    return Case(mode, seed, block_size, num_blocks, max_seqs, budget, tuple(requests))
