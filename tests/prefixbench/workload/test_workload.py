"""Workload generation (seeded, exact) and loading (strict, errors name file:line.field)."""

import json

import pytest

from tools.prefixbench import InputError, simulate_prefix_cache
from tools.prefixbench.workload import (
    DEFAULT_WORKLOAD,
    DEFAULT_WORKLOAD_ARGS,
    generate_shared_prefix_workload,
    load_workload,
    save_workload,
)


def test_committed_default_workload_is_reproducible(tmp_path):
    regenerated = save_workload(generate_shared_prefix_workload(**DEFAULT_WORKLOAD_ARGS), tmp_path / "w.jsonl")
    assert regenerated.read_bytes() == DEFAULT_WORKLOAD.read_bytes()


def test_default_workload_shape_and_expected_reuse():
    w = load_workload()
    assert len(w) == 20 and {len(p) for p in w.prompts} == {1324}
    assert {r["max_tokens"] for r in w.requests} == {64}
    # two 1024-token prefixes: with vLLM's 128-token CPU blocks, 18 of 20 requests reuse 8 blocks each
    r = simulate_prefix_cache(w.prompts, 128, None, last_token_rule=True)
    assert (r["reused_tokens"], r["total_prompt_tokens"]) == (18432, 26480)


def test_prefix_sharing_is_exact():
    w = generate_shared_prefix_workload(9, 100, prefix_len=40, num_prefixes=3, seed=7)
    for i, prompt in enumerate(w.prompts):
        assert prompt[:40] == w.prompts[i % 3][:40]
        assert w.requests[i]["prefix_group"] == i % 3
    assert len({tuple(p[:40]) for p in w.prompts}) == 3
    assert len({tuple(p[40:]) for p in w.prompts}) == 9


def test_shared_ratio_rounds_to_tokens():
    w = generate_shared_prefix_workload(4, 1000, shared_ratio=0.7, num_prefixes=1)
    assert all(p[:700] == w.prompts[0][:700] for p in w.prompts)
    assert w.prompts[0][700] != w.prompts[1][700] or w.prompts[0][701:] != w.prompts[1][701:]


def test_exact_repeats_copy_earlier_requests():
    w = generate_shared_prefix_workload(10, 50, prefix_len=10, exact_repeats=3, seed=1)
    repeats = [r for r in w.requests if "repeat_of" in r]
    assert len(repeats) == 3
    by_id = {r["id"]: r for r in w.requests}
    for r in repeats:
        assert r["prompt_token_ids"] == by_id[r["repeat_of"]]["prompt_token_ids"]
        assert int(r["repeat_of"][1:]) < int(r["id"][1:])


def test_seed_changes_tokens_and_workload_id():
    a = generate_shared_prefix_workload(3, 20, prefix_len=5, seed=1)
    b = generate_shared_prefix_workload(3, 20, prefix_len=5, seed=2)
    assert a.prompts != b.prompts and a.workload_id != b.workload_id
    assert a.workload_id == generate_shared_prefix_workload(3, 20, prefix_len=5, seed=1).workload_id


@pytest.mark.parametrize("kwargs, field", [
    (dict(num_requests=0, input_len=10, prefix_len=1), "num_requests"),
    (dict(num_requests=2, input_len=10, prefix_len=11), "prefix_len"),
    (dict(num_requests=2, input_len=10), "prefix_len"),
    (dict(num_requests=2, input_len=10, prefix_len=2, shared_ratio=0.2), "prefix_len"),
    (dict(num_requests=2, input_len=10, shared_ratio=1.2), "shared_ratio"),
    (dict(num_requests=2, input_len=10, prefix_len=2, num_prefixes=0), "num_prefixes"),
    (dict(num_requests=2, input_len=10, prefix_len=2, exact_repeats=2), "exact_repeats"),
    (dict(num_requests=2, input_len=10, prefix_len=2, output_len=True), "output_len"),
])
def test_generator_rejects_bad_parameters(kwargs, field):
    with pytest.raises(InputError) as err:
        generate_shared_prefix_workload(**kwargs)
    assert err.value.field == field


@pytest.mark.parametrize("line, field", [
    ('{"prompt_token_ids": [1, 2', "w.jsonl:2"),
    ('[1, 2, 3]', "w.jsonl:2"),
    ('{"max_tokens": 4}', "w.jsonl:2.prompt_token_ids"),
    ('{"prompt_token_ids": [1, -1]}', "w.jsonl:2.prompt_token_ids[0][1]"),
    ('{"prompt_token_ids": [1, 2.5]}', "w.jsonl:2.prompt_token_ids[0][1]"),
    ('{"prompt_token_ids": []}', "w.jsonl:2.prompt_token_ids"),
    ('{"prompt_token_ids": [1], "max_tokens": 0}', "w.jsonl:2.max_tokens"),
])
def test_loader_names_file_line_and_field(tmp_path, line, field):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt_token_ids": [1, 2, 3]}\n' + line + "\n")
    with pytest.raises(InputError) as err:
        load_workload(path)
    assert err.value.field == field


def test_loader_rejects_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_workload(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no requests"):
        load_workload(tmp_path / "empty.jsonl")


def test_loader_fills_defaults(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({"prompt_token_ids": [5, 6]}) + "\n")
    w = load_workload(path)
    assert w.requests[0]["id"] == "r00000" and w.requests[0]["max_tokens"] == 64
