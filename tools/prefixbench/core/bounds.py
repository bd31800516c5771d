"""Every numeric limit the project accepts, in one place: the CLI checks them before anything is sent or
started, the library checks them again, and ``--help`` shows them.

Why bounds at all: a value can be a number and still be nonsense here (``nan`` seconds, a billion-token
prompt that exhausts memory, a negative timeout that still starts a server). Each bound says what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import InputError


@dataclass(frozen=True)
class Bound:
    """``low <= value <= high`` (``low < value`` when ``low_open``); integers only when ``integer``."""

    low: float
    high: float
    integer: bool = False
    low_open: bool = False
    unit: str = ""

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        left = "(" if self.low_open else "["
        unit = f" {self.unit}" if self.unit else ""
        return f"{kind} in {left}{_show(self.low)}, {_show(self.high)}]{unit}"

    def check(self, field: str, value: object) -> Any:
        """``value`` if allowed, else ``InputError`` naming ``field`` and what is allowed."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                self.integer and not isinstance(value, int)):
            raise InputError(field, f"must be {self.describe()}, got {type(value).__name__} {str(value)[:40]!r}")
        if isinstance(value, float) and not math.isfinite(value):  # an int is finite (and may be too big to float)
            raise InputError(field, f"must be {self.describe()}, got {value!r}")
        below = value <= self.low if self.low_open else value < self.low
        if below or value > self.high:
            raise InputError(field, f"must be {self.describe()}, got {_show(value)}")
        return value


def _show(value: float) -> str:
    if isinstance(value, int) and abs(value) >= 10**21:  # str() of a huge int is slow, and may be refused
        return f"a number of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{value:,}".replace(",", "_") if isinstance(value, int) and abs(value) >= 100_000 else str(value)


MAX_TOKENS_PER_PROMPT = 1_048_576
PROMPT_TOKENS = Bound(1, MAX_TOKENS_PER_PROMPT, integer=True, unit="tokens")
PREFIX_TOKENS = Bound(0, MAX_TOKENS_PER_PROMPT, integer=True, unit="tokens")
OUTPUT_TOKENS = Bound(1, MAX_TOKENS_PER_PROMPT, integer=True, unit="tokens")
REQUESTS = Bound(1, 1_000_000, integer=True, unit="requests")
REPEATS = Bound(0, 1_000_000, integer=True, unit="requests")
PREFIXES = Bound(1, 100_000, integer=True)
WORKLOAD_TOKENS = 200_000_000
"""Largest generated workload (requests x prompt tokens): about 1.6 GB as token ids in memory."""
SHARE = Bound(0.0, 1.0)
CONCURRENCY = Bound(1, 100_000, integer=True, unit="requests in flight")
REQUEST_RATE = Bound(0.0, 1_000_000.0, low_open=True, unit="requests/s")
WARMUP = Bound(0, 1_000, integer=True, unit="requests")
BLOCK_SIZE = Bound(1, MAX_TOKENS_PER_PROMPT, integer=True, unit="tokens")
CAPACITY = Bound(1, 10**12, integer=True, unit="blocks")
KV_BLOCKS = Bound(2, 10**9, integer=True, unit="blocks, vLLM's null block included")
MEMORY_GIB = Bound(0.0, 1e6, low_open=True, unit="GiB")
PLAN_POINTS = Bound(2, 200, integer=True, unit="pool sizes")
LATENCY_MS = Bound(0.0, 1e7, low_open=True, unit="ms")
THINK_TIME_S = Bound(0.0, 3600.0, unit="s")
SPEED = Bound(0.0, 1e9, low_open=True, unit="x the trace's clock")
TIMEOUT_S = Bound(0.0, 7 * 86_400.0, low_open=True, unit="s")
MAX_OVERHEAD = Bound(0.0, 100.0)
SEED = Bound(-(2**63), 2**63 - 1, integer=True)
RUN_REPEATS = Bound(1, 1_000, integer=True, unit="runs per group and load point")
REPLICAS = Bound(1, 64, integer=True, unit="replicas")
TENSOR_PARALLEL = Bound(1, 1024, integer=True, unit="GPUs")
SWEEP_POINTS = 64
"""Most load points one sweep may list (``--concurrency`` / ``--request-rates``)."""

DEFAULT_REQUEST_TIMEOUT_S = 300.0
"""One request that has not finished after this long counts as failed (``--request-timeout``)."""
DEFAULT_DEADLINE_S = 3600.0
"""A measured phase ends after this long; requests not finished by then fail (``--deadline``)."""

MEMORY_BUDGET_BYTES = 4 * 2**30
"""The most memory one model of a workload may take (block keys, engine-model pools, token ids): a size that needs
more is refused before anything is allocated, naming what asked for it. Sizes beyond what a workload can ever use
(a pool of a billion blocks) cost nothing: the engine model makes a block only when it is first allocated."""
BLOCK_KEY_BYTES = 48
"""One block key of a request in memory (a tuple slot and its int), measured with ``tracemalloc``."""
POOL_BLOCK_BYTES = 320
"""One block an engine-model pool has allocated (free queue, reference count, hash maps), measured likewise."""
MODEL_LAYERS = Bound(1, 10_000, integer=True, unit="layers")
MODEL_HEADS = Bound(1, 1_000_000, integer=True, unit="heads")
MODEL_WIDTH = Bound(1, 10**8, integer=True, unit="(hidden size or head dimension)")
"""A model config's dimensions (``plan --model``): far above any real model, low enough that no KV size overflows."""


def check_memory(field: str, need_bytes: int, what: str, hint: str = "") -> int:
    """``need_bytes`` if within ``MEMORY_BUDGET_BYTES``, else ``InputError`` naming ``field``, what needs the memory
    and (``hint``) how to ask for less."""
    if need_bytes > MEMORY_BUDGET_BYTES:
        gib = f"{need_bytes / 2**30:,.1f}" if need_bytes < 2**80 else "more than 10^15"
        raise InputError(field, f"{what} would need about {gib} GiB of memory, more than the "
                                f"{MEMORY_BUDGET_BYTES / 2**30:g} GiB allowed" + (f": {hint}" if hint else ""))
    return need_bytes
