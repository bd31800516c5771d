"""The capacity planner on the engine model: curve, exact smallest pool, cliff, trace keys, KV bytes."""

from __future__ import annotations

import json
import random

import pytest

from tools.prefixbench.cache.engine_pool import VllmBlockPool
from tools.prefixbench.core.errors import InputError
from tools.prefixbench.serve.kv_memory import kv_bytes_per_token, pool_gib
from tools.prefixbench.simulate import plan
from tools.prefixbench.simulate.pool_size import check_pool_fits, min_pool_blocks
from tools.prefixbench.workload.traces import TraceRequest


def _workload(seed=3, n=60, size=8):
    rng = random.Random(seed)
    prefixes = [[rng.randrange(50) for _ in range(3 * size)] for _ in range(4)]
    prompts = [rng.choice(prefixes) + [rng.randrange(50) for _ in range(rng.randint(1, 2 * size))] for _ in range(n)]
    return plan.requests_from_prompts(prompts, [4] * n, size), prompts


def test_key_requests_replay_exactly_like_token_requests_with_the_stand_in_outputs():
    requests, prompts = _workload()
    pool = VllmBlockPool(9, 8)
    stand_ins = [[plan.STAND_IN_BASE + i * 1_000_000 + k for k in range(4)] for i in range(len(prompts))]
    # each distinct prompt has its own stand-ins; the workload's prompts are all distinct here
    assert len({tuple(p) for p in prompts}) == len(prompts)
    by_tokens = [pool.serve(p, o) for p, o in zip(prompts, stand_ins)]
    by_keys = plan.hit_rate_at(requests, 8, 9)
    assert sum(by_tokens) == by_keys["hit_tokens"]


def test_the_planned_pool_reaches_the_target_and_one_block_less_does_not():
    requests, _ = _workload()
    curve = plan.curve(requests, 8, points=6)
    target = (curve[0]["hit_rate"] + curve[-1]["hit_rate"]) / 2
    exhaustive = {}
    for n in range(plan.min_blocks(requests, 8), plan.no_eviction_blocks(requests, 8) + 1):
        exhaustive[n] = plan.hit_rate_at(requests, 8, n)["hit_rate"]
    for target in (target, curve[1]["hit_rate"], curve[-1]["hit_rate"], (curve[0]["hit_rate"] + 1e-9)):
        found = plan.smallest_pool_for(requests, 8, target, curve, width=1 + int(target * 10) % 3)
        planned, less = found["planned"], found["one_block_less"]
        assert planned["num_blocks"] == min(n for n, r in exhaustive.items() if r >= target), target
        assert less["num_blocks"] == planned["num_blocks"] - 1
        assert less["hit_rate"] is None or less["hit_rate"] < target
    assert plan.smallest_pool_for(requests, 8, 1.0, curve) is None


def test_forked_workers_and_the_default_sequential_replay_give_the_same_points_and_plan():
    requests, _ = _workload()
    default = plan.curve(requests, 8, points=6)
    target = (default[0]["hit_rate"] + default[-1]["hit_rate"]) / 2
    for workers in (1, 3):
        alone = plan.smallest_pool_for(requests, 8, target, default, width=workers)
        with plan.evaluator(requests, 8, workers) as evaluate:
            assert plan.curve(requests, 8, points=6, evaluate=evaluate) == default, workers
            assert plan.smallest_pool_for(requests, 8, target, default, evaluate, width=workers) == alone, workers


def test_the_library_refuses_a_memory_without_kv_bytes_before_any_replay(monkeypatch):
    from tools.prefixbench.run.plan import run_plan

    requests, _ = _workload()
    monkeypatch.setattr(plan, "hit_rate_at", lambda *a: pytest.fail("replayed before checking"))
    with pytest.raises(InputError, match="needs --model") as info:
        run_plan(requests, block_size=8, source={}, target=None, memory_gib=1.0, kv=None)
    assert info.value.field == "--memory-gib"


def test_no_eviction_bound_never_evicts_and_the_minimum_fits_the_largest_request():
    requests, _ = _workload()
    top = plan.hit_rate_at(requests, 8, plan.no_eviction_blocks(requests, 8))
    assert top["evictions"] == 0
    assert plan.hit_rate_at(requests, 8, plan.min_blocks(requests, 8))["hit_tokens"] >= 0
    need, which = min_pool_blocks([(30, 4, "a"), (60, 9, "b")], 8)
    assert (need, which) == (10, "b")  # ceil(68 / 8) = 9 blocks + the null block
    with pytest.raises(InputError, match=r"--kv-blocks.*request b.*at least 10"):
        check_pool_fits([(30, 4, "a"), (60, 9, "b")], 8, 9, flag="--kv-blocks")


def test_trace_requests_use_hash_ids_for_full_blocks_and_fresh_keys_after():
    trace = [TraceRequest(1100, (1, 2, 3), 500), TraceRequest(1024, (1, 2), None)]
    first, second = plan.requests_from_trace(trace)
    assert first.keys[:2] == (1, 2) and len(first.keys) == (1100 + 499) // 512 == 3 and first.keys[2] < 0
    assert second.keys == (1, 2) and second.num_tokens == 1024
    assert plan.hit_rate_at([first, second], 512, 10)["hit_tokens"] == 512  # last-token rule: block 2 recomputed


def test_the_cliff_is_the_steepest_drop_per_block():
    points = [{"num_blocks": n, "hit_rate": r} for n, r in [(10, 0.1), (20, 0.15), (30, 0.6), (60, 0.65)]]
    assert plan.cliff(points)["num_blocks"] == 30 and plan.cliff(points)["below"] == 20


def test_kv_bytes_per_token_from_a_local_model_and_a_config(tmp_path):
    assert kv_bytes_per_token("tiny")["bytes_per_token"] == 2 * 2 * 2 * 32 * 2
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
                                  "hidden_size": 896, "torch_dtype": "bfloat16"}))  # Qwen2.5-0.5B's shape
    found = kv_bytes_per_token(str(tmp_path))
    assert found["bytes_per_token"] == 2 * 24 * 2 * 64 * 2 == 12288
    assert kv_bytes_per_token(str(config), "fp8")["bytes_per_token"] == 6144
    assert pool_gib(2**16, 16, 1024) == 1.0
    with pytest.raises(InputError, match="--model"):
        kv_bytes_per_token(str(tmp_path / "nothing"))
    config.write_text(json.dumps({"num_hidden_layers": 2}))
    with pytest.raises(InputError, match="lacks"):
        kv_bytes_per_token(str(config))


QWEN_SHAPE = {"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "hidden_size": 896}
DEEPSEEK_V3_MLA = {"model_type": "deepseek_v3", "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                   "v_head_dim": 128}
"""DeepSeek-V3's attention fields (its config.json; 61 layers, 128 heads, 128 KV heads, hidden 7168)."""
DEEPSEEK_V3 = {"num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
               "hidden_size": 7168, "torch_dtype": "bfloat16", **DEEPSEEK_V3_MLA}


def test_an_mla_model_keeps_one_latent_per_layer_the_same_on_every_gpu(tmp_path, capsys):
    """vLLM's MLAAttentionSpec: one KV head of kv_lora_rank + qk_rope_head_dim, no separate value, not split by
    tensor parallelism (max_tp_shards=1). DeepSeek-V3: 61 x 576 x 2 = 70,272 bytes per token in bfloat16, where
    the per-head formula would say 2 x 61 x 128 x 56 x 2 = 1,748,992."""
    from tools.prefixbench import cli

    config = tmp_path / "config.json"
    config.write_text(json.dumps(DEEPSEEK_V3))
    found = kv_bytes_per_token(str(config))
    assert (found["attention"], found["kv_heads"], found["head_dim"], found["bytes_per_token"]) == (
        "mla", 1, 576, 70272)
    assert {tp: kv_bytes_per_token(str(config), "fp8", tp)["bytes_per_token"] for tp in (1, 8)} == {1: 35136,
                                                                                                  8: 35136}
    assert kv_bytes_per_token(str(config), tensor_parallel_size=8)["kv_heads_per_gpu"] == 1
    config.write_text(json.dumps({**DEEPSEEK_V3, "model_type": "kimi_k2", "num_hidden_layers": 27}))
    assert kv_bytes_per_token(str(config))["bytes_per_token"] == 27 * 576 * 2
    without_rope = {k: v for k, v in DEEPSEEK_V3.items() if k != "qk_rope_head_dim"}
    config.write_text(json.dumps(without_rope))  # transformers would fill 64: not guessed here
    with pytest.raises(InputError, match=r"config\.json\.qk_rope_head_dim: is missing"):
        kv_bytes_per_token(str(config))
    config.write_text(json.dumps({**DEEPSEEK_V3, "kv_lora_rank": 0}))
    with pytest.raises(InputError, match=r"^.*config\.json\.kv_lora_rank: "):
        kv_bytes_per_token(str(config))
    config.write_text(json.dumps(DEEPSEEK_V3))
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": [*range(10, 74), 100 + i],
                                            "max_tokens": 2}) + "\n" for i in range(4)))
    out = tmp_path / "plan.json"
    assert cli.main(["plan", "--workload", str(workload), "--block-size", "64", "--model", str(config),
                     "--tensor-parallel-size", "8", "--points", "3", "--output", str(out)]) == 0
    assert json.loads(out.read_text())["kv_memory"]["bytes_per_token"] == 70272
    assert "61 layers x one MLA latent of 576" in out.with_suffix(".md").read_text()


def test_kv_bytes_follow_vllms_dtypes_auto_float32_and_its_kv_cache_dtype_names(tmp_path):
    """vLLM 0.32's FullAttentionSpec gives 12,288 bytes per token for this shape in 16 bits, 6,144 in fp8; its auto
    dtype serves float32 weights in 16 bits; --kv-cache-dtype takes vLLM's names and refuses the packed ones."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**QWEN_SHAPE, "torch_dtype": "float32"}))
    found = kv_bytes_per_token(str(config))
    assert (found["bytes_per_token"], found["dtype"], found["tensor_parallel_size"]) == (12288, "bfloat16", 1)
    assert kv_bytes_per_token(str(config), "auto")["bytes_per_token"] == 12288
    assert {name: kv_bytes_per_token(str(config), name)["bytes_per_token"]
            for name in ("fp8", "fp8_e4m3", "fp8_e5m2", "float16")} == {"fp8": 6144, "fp8_e4m3": 6144,
                                                                      "fp8_e5m2": 6144, "float16": 12288}
    for name in ("int8", "nvfp4", "float8_e4m3fn", "turboquant_k8v4"):
        with pytest.raises(InputError, match="^--kv-cache-dtype: "):
            kv_bytes_per_token(str(config), name)


def test_with_tensor_parallelism_the_bytes_are_one_gpus_as_vllm_sizes_them(tmp_path, capsys):
    """Each GPU keeps max(1, kv_heads // tp) KV heads (vLLM's get_num_kv_heads): 2 KV heads over 2 GPUs is one
    each; over 4 GPUs they are copied, still one each."""
    from tools.prefixbench import cli

    config = tmp_path / "config.json"
    config.write_text(json.dumps({**QWEN_SHAPE, "num_key_value_heads": 8, "torch_dtype": "bfloat16"}))
    sizes = {tp: kv_bytes_per_token(str(config), tensor_parallel_size=tp) for tp in (1, 2, 4, 8, 16)}
    assert {tp: (k["kv_heads_per_gpu"], k["bytes_per_token"]) for tp, k in sizes.items()} == {
        1: (8, 49152), 2: (4, 24576), 4: (2, 12288), 8: (1, 6144), 16: (1, 6144)}
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": [*range(10, 74), 100 + i] * 1,
                                            "max_tokens": 2}) + "\n" for i in range(4)))
    out = tmp_path / "plan.json"
    assert cli.main(["plan", "--workload", str(workload), "--block-size", "16", "--model", str(config),
                     "--tensor-parallel-size", "4", "--points", "3", "--output", str(out)]) == 0
    kv = json.loads(out.read_text())["kv_memory"]
    assert (kv["tensor_parallel_size"], kv["bytes_per_token"]) == (4, 12288)
    assert "per GPU at tensor-parallel size 4" in out.with_suffix(".md").read_text()
    assert cli.main(["plan", "--workload", str(workload), "--tensor-parallel-size", "2", "--output",
                     str(tmp_path / "b.json")]) == 1
    assert "--tensor-parallel-size: needs --model" in capsys.readouterr().err


@pytest.mark.parametrize("extra, refused", [
    ({**DEEPSEEK_V3_MLA, "model_type": "deepseek_v32", "index_topk": 2048}, "indexer"),  # DeepSeek-V3.2
    ({**DEEPSEEK_V3_MLA, "index_topk": None}, "indexer"),  # vLLM asks whether the key is there
    ({**DEEPSEEK_V3_MLA, "model_type": "minicpm3"}, "'minicpm3'"),  # vLLM runs it without MLA
    ({**DEEPSEEK_V3_MLA, "model_type": None}, "model_type None"),
    ({**DEEPSEEK_V3_MLA, "model_type": "kimi_linear"}, "linear-attention"),
    ({"linear_attn_config": {"kda_layers": [1, 2]}}, "linear_attn_config"),
    ({**DEEPSEEK_V3_MLA, "compress_ratios": [1, 4]}, "compress_ratios"),  # DeepSeek-V4
    ({**DEEPSEEK_V3_MLA, "is_causal": False}, "bidirectional"),
    ({"layer_types": ["linear_attention", "full_attention"]}, "linear_attention"),
    ({"layer_types": ["sliding_attention", "full_attention"]}, "sliding_attention"),
    ({"hybrid_override_pattern": "M-M*"}, "hybrid"),
    ({"sliding_window": 4096}, "sliding window"),  # Mistral-7B-v0.1: vLLM applies it
    ({"sliding_window": 4096, "use_sliding_window": True}, "sliding window"),
    ({"sliding_window": 32768, "use_sliding_window": False}, None),  # Qwen2's configs: the window is off
    ({"layer_types": ["full_attention"] * 24}, None),
])
def test_a_model_whose_kv_is_not_keys_and_values_per_head_is_refused_with_the_reason(tmp_path, extra, refused):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**QWEN_SHAPE, "torch_dtype": "bfloat16", **extra}))
    if refused is None:
        assert kv_bytes_per_token(str(config))["bytes_per_token"] == 12288
        return
    with pytest.raises(InputError, match=f"^--model: .*{refused}"):
        kv_bytes_per_token(str(config))


def test_the_plan_command_writes_strict_json_markdown_and_a_plot(tmp_path):
    from tools.prefixbench import cli

    rng = random.Random(0)
    prefix = [rng.randrange(10, 900) for _ in range(64)]
    lines = [{"id": f"r{i}", "prompt_token_ids": prefix + [rng.randrange(10, 900) for _ in range(20)],
              "max_tokens": 4} for i in range(30)]
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "plan.json"
    code = cli.main(["plan", "--workload", str(workload), "--block-size", "16", "--target-hit-rate", "0.5",
                     "--model", "tiny", "--memory-gib", "0.0001", "--points", "5", "--output", str(out), "--json"])
    assert code == 0
    result = json.loads(out.read_text(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert result["schema"] == "prefixbench.plan/1" and result["plan"]["planned"]["hit_rate"] >= 0.5
    assert result["reverse"]["num_blocks"] == int(0.0001 * 2**30 // (16 * 512))
    assert out.with_suffix(".png").stat().st_size > 0 and "| pool (blocks) |" in out.with_suffix(".md").read_text()
    first = out.read_bytes()
    assert cli.main(["plan", "--workload", str(workload), "--block-size", "16", "--points", "3",
                     "--output", str(out), "--json"]) == 0
    assert out.with_name("plan.previous.json").read_bytes() == first  # a rerun keeps the previous plan
    assert cli.main(["plan", "--workload", str(out.with_name("plan.previous.json")), "--block-size", "16",
                     "--output", str(out)]) == 1  # the keep copy is never an input


def test_one_block_less_is_printed_with_the_digits_that_show_it_misses_the_target(tmp_path):
    """On a long trace one block less can lose a few hundred tokens of a hundred million: two decimals printed
    30.00% for both sizes (measured on the Mooncake conversation trace for DeepSeek-V3, 20,914 and 20,913 blocks)."""
    from tools.prefixbench import cli
    from tools.prefixbench.report.plan import plan_rows

    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": [*range(10, 74), 100 + i],
                                            "max_tokens": 2}) + "\n" for i in range(8)))
    out = tmp_path / "plan.json"
    assert cli.main(["plan", "--workload", str(workload), "--block-size", "16", "--target-hit-rate", "0.5",
                     "--points", "3", "--output", str(out), "--json"]) == 0
    result = json.loads(out.read_text())
    rows = dict(plan_rows(result))
    assert rows["one block less"].endswith("(below the target)") and "%" in rows["smallest pool for 50.00%"]
    result.update(target_hit_rate=0.3)
    result["plan"]["planned"]["hit_rate"], result["plan"]["one_block_less"]["hit_rate"] = 0.30000661, 0.29999600
    rows = dict(plan_rows(result))
    assert rows["smallest pool for 30.00%"].endswith(": 30.0007%")
    assert rows["one block less"].endswith(": 29.9996% (below the target)")


def test_block_keys_beyond_the_memory_budget_are_refused_before_one_is_made():
    trace = [TraceRequest(1, (i,), 1_048_576) for i in range(10_000)]  # 20 million decode blocks
    with pytest.raises(InputError, match="GiB of memory") as info:
        plan.requests_from_trace(trace, field="--trace")
    assert info.value.field == "--trace"
    assert len(plan.requests_from_trace(trace[:10], max_output=512)) == 10  # capped: it fits


def test_workers_are_as_many_as_the_memory_budget_holds_pools_for():
    from tools.prefixbench.core.bounds import MEMORY_BUDGET_BYTES, POOL_BLOCK_BYTES

    assert plan.workers_of(8) == 8 and plan.workers_of(8, blocks=1000) == 8
    assert plan.workers_of(8, blocks=MEMORY_BUDGET_BYTES // POOL_BLOCK_BYTES // 3) == 3
    assert plan.workers_of(8, blocks=10**12) == 1
