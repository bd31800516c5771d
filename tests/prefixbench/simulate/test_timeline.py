"""The timeline replay on its own (no vLLM): the scheduler rules it models, each on a case small enough to follow.

Its agreement with vLLM's own scheduler over thousands of seeded cases is tests/prefixbench/twin/.
"""

from __future__ import annotations

import random

from tools.prefixbench.simulate.predict import predict_hits
from tools.prefixbench.simulate.timeline import (Observed, SchedulerSettings, TimelineRequest, replay_observed,
                                                 replay_timeline)

WIDE = SchedulerSettings(block_size=16, num_blocks=1000, max_num_seqs=8, max_num_batched_tokens=4096)


def test_blocks_are_cached_when_scheduled_so_a_same_step_twin_hits():
    prompt = list(range(100, 164))
    result = replay_timeline([TimelineRequest(prompt, [7, 7], 0), TimelineRequest(prompt, [7, 7], 0)], WIDE)
    assert result.hits == [0, 48]
    assert result.first_token_steps == [0, 0] and result.finish_steps == [1, 1]


def test_one_at_a_time_equals_the_send_order_engine_model():
    rng = random.Random(5)
    shared = [rng.randrange(10, 1000) for _ in range(40)]
    prompts = [shared[:rng.randrange(1, 40)] + [rng.randrange(10, 1000) for _ in range(rng.randrange(1, 30))]
               for _ in range(30)]
    outputs = [[rng.randrange(10, 1000) for _ in range(rng.randrange(1, 20))] for _ in prompts]
    settings = SchedulerSettings(16, 9, 1, 4096)
    timeline = replay_timeline([TimelineRequest(p, o, 0) for p, o in zip(prompts, outputs)], settings)
    expected = predict_hits(prompts, 16, 9, outputs=outputs, sequential=True)["per_request_hit_tokens"]
    assert timeline.hits == expected
    assert timeline.evictions > 0


def test_a_running_request_is_preempted_when_the_pool_runs_dry_and_reports_its_first_hit_only():
    a, b = list(range(10, 42)), list(range(50, 82))
    settings = SchedulerSettings(block_size=16, num_blocks=6, max_num_seqs=4, max_num_batched_tokens=4096)
    result = replay_timeline([TimelineRequest(a, [1] * 40, 0), TimelineRequest(b, [2] * 40, 0)], settings)
    assert result.preemptions[1] >= 1 and result.preemptions[0] == 0
    assert result.hits == [0, 0]
    assert result.finish_steps[1] > result.finish_steps[0]


def test_a_request_waits_for_a_sequence_slot():
    reqs = [TimelineRequest(list(range(10 * i, 10 * i + 20)), [1, 1, 1], 0) for i in range(1, 4)]
    result = replay_timeline(reqs, SchedulerSettings(16, 100, 2, 4096))
    assert result.first_token_steps == [0, 0, 3]


def test_a_token_budget_splits_a_prompt_into_chunks():
    result = replay_timeline([TimelineRequest(list(range(10, 110)), [1, 1], 0)], SchedulerSettings(16, 100, 4, 30),
                             keep_schedule=True)
    assert [tokens for step in result.schedule for _, tokens in step] == [30, 30, 30, 10, 1]
    assert result.first_token_steps == [3]


def test_arrivals_are_inferred_from_the_observed_steps():
    rng = random.Random(11)
    shared = [rng.randrange(10, 1000) for _ in range(48)]
    reqs = [TimelineRequest(shared + [rng.randrange(10, 1000) for _ in range(rng.randrange(1, 40))],
                            [rng.randrange(10, 1000) for _ in range(rng.randrange(2, 30))], 3 * i)
            for i in range(10)]
    settings = SchedulerSettings(16, 14, 3, 4096)
    truth = replay_timeline(reqs, settings)
    observed = [Observed(r.prompt, r.outputs, f, e)
                for r, f, e in zip(reqs, truth.first_token_steps, truth.finish_steps)]
    inferred = replay_observed(observed, settings)
    assert inferred.hits == truth.hits
    assert inferred.unexplained == []
    wrong = [Observed(o.prompt, o.outputs, o.first_token_step, o.finish_step + 50) for o in observed[:2]]
    assert replay_observed(wrong, settings).unexplained == [0, 1]
