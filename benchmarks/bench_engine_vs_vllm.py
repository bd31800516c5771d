"""Benchmark: the engine model against vLLM's own scheduler loop on the same sequential workload, side by side.

Both serve the same 2,000 requests one at a time (shared prefixes, multi-turn growth, exact repeats, unique
tails; block size 16; a pool small enough to evict): vLLM's ``Scheduler`` driven in-process by
``twin.vllm_core`` (schedule -> fake model -> update_from_output, every decode step), and the engine model
through ``simulate.predict.predict_hits`` (what every prediction the project prints runs). Printed: seconds
for each, tokens per second, the speed-up, and whether every request's hit agreed. The vLLM side's import and
setup are left out of its time. Both sides are single-threaded Python, so both are timed in CPU seconds of this
process (``time.process_time``): a neighbour on a shared machine slows neither. The garbage collector is off
while either side runs, as ``timeit`` does (a collection that the other side's garbage triggered would land on
whichever side happens to be running).

    .venv/bin/python benchmarks/bench_engine_vs_vllm.py [--requests N] [--repeats K]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import time
from dataclasses import replace

from tools.prefixbench.simulate.predict import predict_hits
from tools.prefixbench.twin.cases import Case, CaseRequest, blocks_for
from tools.prefixbench.twin.vllm_core import _Driver


def workload(count: int, seed: int = 0, block_size: int = 16) -> Case:
    rng = random.Random(seed)
    tokens = lambda n: tuple(rng.randrange(10, 1000) for _ in range(n))  # noqa: E731
    prefixes = [tokens(rng.choice([64, 128, 200])) for _ in range(8)]
    made: list[CaseRequest] = []
    for _ in range(count):
        outputs = tokens(rng.randint(8, 32))
        kind = rng.random()
        if made and kind < 0.15:
            made.append(replace(rng.choice(made[-50:]), outputs=outputs))
        elif made and kind < 0.4:
            turn = rng.choice(made[-20:])
            made.append(CaseRequest((turn.prompt + turn.outputs + tokens(rng.randint(8, 48)))[-600:], outputs))
        else:
            made.append(CaseRequest(rng.choice(prefixes) + tokens(rng.randint(16, 120)), outputs))
    pool = max(blocks_for(r, block_size) for r in made) * 6
    return Case("sequential", seed, block_size, pool, 8, 4096, tuple(made))


def time_vllm(case: Case) -> tuple[float, list]:
    driver = _Driver(case)  # scheduler construction left out of the timing
    with _no_gc():
        start = time.process_time()
        driver.run()
        elapsed = time.process_time() - start
    return elapsed, [r.hit_tokens for r in driver.results]


def time_engine_model(case: Case) -> tuple[float, list]:
    with _no_gc():
        start = time.process_time()
        prediction = predict_hits([r.prompt for r in case.requests], case.block_size, case.num_blocks,
                                  outputs=[list(r.outputs) for r in case.requests], sequential=True)
        elapsed = time.process_time() - start
    return elapsed, prediction["per_request_hit_tokens"]


@contextlib.contextmanager
def _no_gc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    case = workload(args.requests)
    total = sum(len(r.prompt) + len(r.outputs) for r in case.requests)
    time_vllm(replace(case, requests=case.requests[:5]))  # warm the imports
    rows = []
    for _ in range(args.repeats):
        (vllm_s, vllm_hits), (model_s, model_hits) = time_vllm(case), time_engine_model(case)
        rows.append((vllm_s, model_s, vllm_hits == model_hits))
    print(f"{args.requests} sequential requests, {total:,} tokens, block size {case.block_size}, "
          f"pool {case.num_blocks} blocks")
    print(f"{'run':>4} {'vLLM scheduler s':>17} {'engine model s':>15} {'speed-up':>9} {'hits agree':>11}")
    for i, (vllm_s, model_s, agree) in enumerate(rows):
        print(f"{i:>4} {vllm_s:>17.3f} {model_s:>15.4f} {vllm_s / model_s:>8.1f}x {str(agree):>11}")
    best_vllm, best_model = min(r[0] for r in rows), min(r[1] for r in rows)
    print(f"best of {args.repeats}: vLLM {total / best_vllm:,.0f} tokens/s, engine model {total / best_model:,.0f} "
          f"tokens/s, speed-up {best_vllm / best_model:.1f}x")


if __name__ == "__main__":
    main()
