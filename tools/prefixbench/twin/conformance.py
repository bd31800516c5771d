"""The engine model against vLLM's own scheduler: every request's hit, per mode, over seeded cases.

For each case the engine model (``simulate.predict.predict_hits``, the function every prediction the project
prints goes through) sees what a client would know: the prompts in arrival order, the generated token ids, the
block size and the pool size; never the engine's steps. vLLM's scheduler (``vllm_core``) runs the same case. A
request agrees when both give the same hit tokens.

Where the model is exact by its own rule (one request at a time: ``sequential``, ``reset``, ``chunked``,
``async``, ``serial_queue``) any difference is a bug; ``shrink`` cuts the case down to a minimal one and
``reproduction`` prints it as a test to paste. ``concurrent`` is measured and reported: the model replays
overlapping requests one at a time in the order sent, an estimate, and the record says how often it differs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from ..cache.engine_pool import VLLM_VERSION_MODELLED
from ..simulate.predict import predict_hits
from .cases import MODES, Case, make_case

EXACT_MODES = ("sequential", "reset", "chunked", "async", "serial_queue")
"""Modes where the engine model claims exactness: a difference there fails the suite."""
SCHEMA = "prefixbench.conformance/1"


def model_hits(case: Case) -> list[int]:
    """The engine model's hit per request: one pool per stretch between resets, requests in arrival order."""
    hits: list[int] = []
    segment: list = []
    for request in list(case.requests) + [None]:
        if request is None or (request.reset_before and segment):
            if segment:
                prediction = predict_hits([r.prompt for r in segment], case.block_size, case.num_blocks,
                                          outputs=[list(r.outputs) for r in segment], sequential=True)
                hits += prediction["per_request_hit_tokens"]
            segment = []
        if request is not None:
            segment.append(request)
    return hits


@dataclass
class CaseResult:
    case: Case
    model: list[int]
    vllm: list[int | None]
    preemptions: int

    @property
    def differing(self) -> list[int]:
        return [i for i, (m, v) in enumerate(zip(self.model, self.vllm)) if m != v]


def check_case(case: Case, run: Callable | None = None) -> CaseResult:
    """Run ``case`` through vLLM's scheduler (``run``, default ``vllm_core.run_case``) and the engine model."""
    if run is None:
        from .vllm_core import run_case as run
    twin = run(case)
    return CaseResult(case, model_hits(case), twin.hits, sum(r.preemptions for r in twin.requests))


def shrink(case: Case, fails: Callable[[Case], bool]) -> Case:
    """A smaller case that still ``fails``: drop requests, then shorten outputs and prompts, while it fails."""
    changed = True
    while changed:
        changed = False
        for candidate in _smaller(case):
            if candidate.requests and fails(candidate):
                case, changed = candidate, True
                break
    return case


def _smaller(case: Case) -> Iterable[Case]:
    requests = list(case.requests)
    for i in range(len(requests)):
        yield replace(case, requests=tuple(requests[:i] + requests[i + 1:]))
    for i, r in enumerate(requests):
        if len(r.outputs) > 1:
            yield replace(case, requests=tuple(requests[:i] + [replace(r, outputs=r.outputs[:len(r.outputs) // 2])]
                                               + requests[i + 1:]))
        if len(r.prompt) > case.block_size:
            cut = replace(r, prompt=r.prompt[:len(r.prompt) - case.block_size])
            yield replace(case, requests=tuple(requests[:i] + [cut] + requests[i + 1:]))


def reproduction(result: CaseResult) -> str:
    """A pytest test that replays the (shrunk) case and fails the same way."""
    return "\n".join([
        "from tools.prefixbench.twin.cases import Case, CaseRequest",
        "from tools.prefixbench.twin.conformance import check_case",
        "",
        "",
        f"def test_conformance_{result.case.mode}_seed_{result.case.seed}():",
        f"    case = {result.case.literal()}",
        "    result = check_case(case)",
        f"    assert result.model == result.vllm  # was model {result.model} vs vLLM {result.vllm}",
        "",
    ])


@dataclass
class ModeTally:
    mode: str
    cases: int = 0
    requests: int = 0
    agreeing: int = 0
    preempted_cases: int = 0
    first_divergence: dict | None = None
    seconds: float = 0.0
    failures: list[CaseResult] = field(default_factory=list)

    def add(self, result: CaseResult) -> None:
        self.cases += 1
        self.requests += len(result.model)
        self.agreeing += len(result.model) - len(result.differing)
        self.preempted_cases += result.preemptions > 0
        if result.differing:
            self.failures.append(result)
            if self.first_divergence is None:
                i = result.differing[0]
                self.first_divergence = {"seed": result.case.seed, "request": i, "model_hit_tokens": result.model[i],
                                         "vllm_hit_tokens": result.vllm[i]}

    def as_json(self) -> dict:
        return {"mode": self.mode, "exact_claimed": self.mode in EXACT_MODES, "cases": self.cases,
                "requests": self.requests, "agreeing_requests": self.agreeing,
                "agreement": self.agreeing / self.requests if self.requests else None,
                "preempted_cases": self.preempted_cases, "first_divergence": self.first_divergence,
                "seconds": round(self.seconds, 3)}


def run_suite(modes: Iterable[str] = MODES, seeds: Iterable[int] = range(4), cases_per_seed: int = 25,
              requests_per_case: int = 12, run: Callable | None = None) -> dict[str, ModeTally]:
    """Every mode over ``seeds`` x ``cases_per_seed`` seeded cases; a tally per mode."""
    tallies = {}
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        tally, start = ModeTally(mode), time.perf_counter()
        for seed in seeds:
            for k in range(cases_per_seed):
                tally.add(check_case(make_case(mode, seed * 1000 + k, requests_per_case), run))
        tally.seconds = time.perf_counter() - start
        tallies[mode] = tally
    return tallies


def record(tallies: dict[str, ModeTally], vllm_version: str | None) -> dict:
    """The JSON record of one suite run, for ``KNOWN_RULES`` to cite."""
    exact = all(t.agreeing == t.requests for t in tallies.values() if t.mode in EXACT_MODES)
    return {"schema": SCHEMA, "vllm_version": vllm_version, "rules_version": VLLM_VERSION_MODELLED,
            "exact_modes_agree": exact, "modes": [t.as_json() for t in tallies.values()]}
