"""The engine model against vLLM's own scheduler: every request's hit, per mode, over seeded cases.

vLLM's scheduler (``vllm_core``) runs each case; the engine model sees only what a client would know: the
prompts in send order, the generated token ids, the scheduler settings and pool size, and the engine steps each
request's first and last token came out in; never the arrival steps. Two models are checked:

- ``send_order``: ``simulate.predict.predict_hits`` replaying requests one at a time in the order sent (what a
  run without a timeline predicts); exact only when requests ran one at a time;
- ``timeline``: ``simulate.timeline.replay_observed``, which infers the arrivals from the observed steps and
  steps the engine as the scheduler does; it is the claimed model wherever it applies (no resets, no async
  scheduling with overlap), and ``send_order`` where it does not (``reset``, ``async``).

A request agrees when the claimed model gives the hit tokens vLLM reported. Any difference is a bug: ``shrink``
cuts the case down to a minimal one and ``reproduction`` prints it as a test to paste.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterable

from ..cache.engine_pool import rules_for
from ..simulate.predict import predict_hits
from ..simulate.timeline import Observed, SchedulerSettings, replay_observed
from .cases import MODES, Case, make_case

if TYPE_CHECKING:
    from .vllm_core import TwinRun

EXACT_MODES = MODES
"""Modes where the engine model claims exactness: a difference there fails the suite."""
SEND_ORDER_ONLY = ("reset", "async")
"""Modes the timeline replay does not model (prefix-cache resets; the async scheduler's step ahead)."""
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


def timeline_hits(case: Case, twin: TwinRun) -> tuple[list[int | None], dict]:
    """The timeline replay's hit per request from the observed steps, and the requests it could not settle."""
    observed = []
    for r, t in zip(case.requests, twin.requests, strict=True):
        if t.first_token_step is None or t.finish_step is None:  # run_case drives every request to its end
            raise RuntimeError(f"case {case.seed}: a request never finished in vLLM's scheduler")
        observed.append(Observed(r.prompt, r.outputs, t.first_token_step, t.finish_step))
    settings = SchedulerSettings(case.block_size, case.num_blocks, case.max_num_seqs, case.max_num_batched_tokens)
    replay = replay_observed(observed, settings)
    return replay.hits, {"unsettled": replay.unsettled, "unexplained": replay.unexplained}


@dataclass
class CaseResult:
    case: Case
    model: list
    """The claimed model's hits (``timeline``, or ``send_order`` in ``SEND_ORDER_ONLY`` modes)."""
    vllm: list[int | None]
    preemptions: int
    send_order: list[int] = field(default_factory=list)
    unsettled: dict = field(default_factory=dict)

    @property
    def differing(self) -> list[int]:
        return [i for i, (m, v) in enumerate(zip(self.model, self.vllm, strict=True)) if m != v]

    @property
    def send_order_agreeing(self) -> int:
        return sum(m == v for m, v in zip(self.send_order, self.vllm, strict=True))


def check_case(case: Case, run: Callable | None = None) -> CaseResult:
    """Run ``case`` through vLLM's scheduler (``run``, default ``vllm_core.run_case``) and the engine models."""
    if run is None:
        from .vllm_core import run_case

        run = run_case
    twin = run(case)
    send_order = model_hits(case)
    model, info = (send_order, {}) if case.mode in SEND_ORDER_ONLY else timeline_hits(case, twin)
    return CaseResult(case, model, twin.hits, sum(r.preemptions for r in twin.requests), send_order,
                      info.get("unsettled", {}))


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
    send_order_agreeing: int = 0
    unsettled: int = 0
    preempted_cases: int = 0
    first_divergence: dict | None = None
    seconds: float = 0.0
    failures: list[CaseResult] = field(default_factory=list)

    def add(self, result: CaseResult) -> None:
        self.cases += 1
        self.requests += len(result.model)
        self.agreeing += len(result.model) - len(result.differing)
        self.send_order_agreeing += result.send_order_agreeing
        self.unsettled += len(result.unsettled)
        self.preempted_cases += result.preemptions > 0
        if result.differing:
            self.failures.append(result)
            if self.first_divergence is None:
                i = result.differing[0]
                self.first_divergence = {"seed": result.case.seed, "request": i, "model_hit_tokens": result.model[i],
                                         "vllm_hit_tokens": result.vllm[i]}

    def as_json(self) -> dict:
        share = (lambda n: n / self.requests) if self.requests else (lambda n: None)
        return {"mode": self.mode, "exact_claimed": self.mode in EXACT_MODES,
                "model": "send_order" if self.mode in SEND_ORDER_ONLY else "timeline", "cases": self.cases,
                "requests": self.requests, "agreeing_requests": self.agreeing, "agreement": share(self.agreeing),
                "send_order_agreement": share(self.send_order_agreeing), "unsettled_requests": self.unsettled,
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
    return {"schema": SCHEMA, "vllm_version": vllm_version, "rules_version": rules_for(vllm_version)["rules_version"],
            "exact_modes_agree": exact, "modes": [t.as_json() for t in tallies.values()]}
