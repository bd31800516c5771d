"""Nothing lost, nothing leaked: bounded memory, no traceback on a bad number, a validated result is a usable one, and
a number no server can mean becomes null with the reason.

Each test states a promise and tries it the way a hostile user or a lying server would: the CLI (in process, or as a
subprocess under a 2 GiB address-space limit where memory is the point) against fake servers on loopback that send
what a real vLLM cannot be made to send. Bad input: exit 1, one stderr line naming the field, no traceback, nothing
written. Server data: the result stays strict JSON, the impossible number is null with a reason, and ``report``
renders the command's own result.
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from backend_fixtures import CacheOffFakeServer, CachingFakeServer, FakeServer, prometheus_text

from tools.prefixbench.cli import main
from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.paths import REPO_ROOT

pytestmark = pytest.mark.long_unit  # a CLI subprocess per case: 40-60 s

ADDRESS_SPACE = 2 << 30
"""The limit the oversized commands run under: the CLI starts well inside it, the old eager pool did not fit."""


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _limited(args, cwd, timeout=180):
    """The CLI as a subprocess under ``ADDRESS_SPACE``."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    return subprocess.run([sys.executable, "-m", "tools.prefixbench", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, preexec_fn=limit)


def _one_line(stderr: str, field: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in stderr, stderr[-3000:]


def _cache_config(num_blocks: object = 1000) -> str:
    return ("# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",enable_prefix_caching="
            f"\"True\",engine=\"0\",num_gpu_blocks=\"{num_blocks}\"}} 1.0\n")


class _Vllmish(FakeServer):
    """Streams generated token ids as vLLM does with ``return_token_ids``; ``cached(prompt)`` and ``completion``
    (the final usage's ``completion_tokens``) let the usage lie; ``metrics`` as ``FakeServer``."""

    def __init__(self, metrics=lambda: prometheus_text(0, 0), cached=None, completion=None):
        super().__init__(metrics=metrics, models={"data": [{"id": "m", "max_model_len": 100_000}]})
        self.cached, self.completion = cached, completion

    def counting(self) -> str:
        """Counters that fit what was sent: every prompt token queried, a quarter of them hits."""
        queries = sum(len(p) for p in self.prompts)
        return prometheus_text(queries, queries // 4) + _cache_config()

    async def _completions(self, request):
        from aiohttp import web

        body = await request.json()
        prompt, n = body["prompt"], body.get("max_tokens", 4)
        self.prompts.append(prompt)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(1, n + 1):
            chunk = {"choices": [{"index": 0, "text": "x", "token_ids": [7 + i]}],
                     "usage": {"prompt_tokens": len(prompt), "completion_tokens": i}}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await asyncio.sleep(0)
        usage = {"prompt_tokens": len(prompt), "completion_tokens": self.completion or n}
        if self.cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached(prompt)}
        await response.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())
        return response


HIT = ["--model", "m", "--hit-rate", "0.5", "--input-len", "64", "--num-requests", "2", "--output-len", "2"]


# ------------------------------------------------------------------------------------------ bounded memory

def _trace(path: Path, lines: int, output_length: object) -> Path:
    path.write_text("".join(f'{{"timestamp": {i}, "input_length": 1, "hash_ids": [{i}], "output_length": '
                            f'{output_length}}}\n' for i in range(lines)))
    return path


OVERSIZED = [
    # (case, argv with {tmp}, the field the one line names)
    ("a trace line's output_length of 10^18", ["plan", "--trace", "{tmp}/huge_output.jsonl"],
     "huge_output.jsonl:1.output_length"),
    ("a trace whose outputs together need 7 GiB of block keys", ["plan", "--trace", "{tmp}/many.jsonl"], "--trace"),
    ("a workload whose --output-len needs 70 GiB", ["plan", "--workload", "{tmp}/w.jsonl", "--output-len", "1048576"],
     "--workload"),
]


@pytest.mark.parametrize("case, argv, field", OVERSIZED, ids=[c[0] for c in OVERSIZED])
def test_an_oversized_input_is_refused_before_it_is_allocated_even_in_2_gib(case, argv, field, tmp_path):
    _trace(tmp_path / "huge_output.jsonl", 1, "1000000000000000000")
    _trace(tmp_path / "many.jsonl", 10_000, 1_048_576)
    (tmp_path / "w.jsonl").write_text("".join(json.dumps({"prompt_token_ids": list(range(i, i + 64))}) + "\n"
                                              for i in range(3000)))
    before = sorted(tmp_path.iterdir())
    run = _limited([a.format(tmp=tmp_path) for a in argv], cwd=tmp_path)
    assert run.returncode == 1, (case, run.stderr[-3000:])
    _one_line(run.stderr, field)
    assert sorted(tmp_path.iterdir()) == before, f"{case}: wrote files"


def test_the_address_space_limit_binds_an_eager_billion_block_pool():
    """The proof that the next test means something: the old pool's reference counts alone (one list slot per
    block, beside a free queue of one entry per block) do not fit in the limit."""
    eager = "ref = [0] * 10**9"
    run = subprocess.run([sys.executable, "-c", eager], capture_output=True, text=True, timeout=300,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE)))
    assert run.returncode != 0 and "MemoryError" in run.stderr


@pytest.mark.parametrize("flags, published", [(["--kv-blocks", "1000000000"], ""),
                                              ([], _cache_config(1_000_000_000))],
                         ids=["--kv-blocks 1e9", "a server publishing num_gpu_blocks 1e9"])
def test_a_billion_block_pool_costs_what_the_workload_touches(flags, published, tmp_path):
    """Inside the declared bound, so it must work: the engine model predicts, the report renders it."""
    with _Vllmish(metrics=lambda: prometheus_text(0, 0) + published) as server:
        run = _limited(["hitrate", "--endpoint", server.base_url, *HIT, "--block-size", "16", *flags,
                        "--output", tmp_path / "r.json"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    result = _strict((tmp_path / "r.json").read_text())
    assert result["server"]["num_blocks"] == 1_000_000_000
    assert result["prediction"]["policy"] == "vllm_block_pool" and result["prediction"]["predicted_hit_tokens"] == 64
    assert main(["report", str(tmp_path / "r.json")]) == 0


# ------------------------------------------------------------------------------- bad numbers, one line

def _config(**fields) -> str:
    shape = {"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "hidden_size": 896}
    return json.dumps({**shape, **fields})


CONFIGS = [
    ("0 attention heads", _config(num_attention_heads=0), "config.json.num_attention_heads"),
    ("layers 1e999 (infinite as JSON reads it)", _config(num_hidden_layers=1).replace(
        '"num_hidden_layers": 1', '"num_hidden_layers": 1e999'), "config.json.num_hidden_layers"),
    ("a 400-digit layer count", _config(num_hidden_layers=10**400), "config.json.num_hidden_layers"),
    ("a hidden size that is a string", _config(hidden_size="896"), "config.json.hidden_size"),
    ("a hidden size below the head count", _config(hidden_size=7), "config.json.hidden_size"),
    ("a config nested past the parser's depth", "[" * 100_000, "--model"),
]


@pytest.mark.parametrize("case, text, field", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_a_model_config_with_impossible_dimensions_is_one_line_naming_the_field(case, text, field, tmp_path,
                                                                                 monkeypatch, capsys):
    (tmp_path / "config.json").write_text(text)
    (tmp_path / "w.jsonl").write_text(json.dumps({"prompt_token_ids": list(range(40))}) + "\n")
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    code = main(["plan", "--workload", "w.jsonl", "--model", "config.json", "--memory-gib", "1"])
    assert code == 1
    _one_line(capsys.readouterr().err, field)
    assert sorted(tmp_path.iterdir()) == before


# ------------------------------------------------------------------------- validated means usable

@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, Path]:
    """Real results the project writes, one per kind ``report`` renders: hitrate (with an SGLang gauge and a chat
    template note added as the hitrate command writes them), hitrate over two replicas, sessions, replay, isolation,
    a load sweep of two points and two G0 / G1 runs, one on two replicas per group (G0 and G1 on fake servers that
    cache, as the golden ones'), and a capacity plan with a target, a model and a memory budget."""
    out = tmp_path_factory.mktemp("written")
    (out / "t.jsonl").write_text("".join(json.dumps({"timestamp": 10 * i, "input_length": 600, "output_length": 3,
                                                     "hash_ids": [1, 2 + i]}) + "\n" for i in range(3)))
    a, b = _Vllmish(cached=lambda p: 0), _Vllmish(cached=lambda p: 0)
    a.metrics, b.metrics = a.counting, b.counting
    with a, b:
        live = ["--endpoint", a.base_url, "--model", "m"]
        commands = {
            "hitrate": ["hitrate", *live[:2], *HIT],
            "replicas": ["hitrate", *live[:2], "--endpoint", b.base_url, "--routing", "round_robin", *HIT],
            "sessions": ["sessions", *live, "--users", "2", "--turns", "2"],
            "replay": ["replay", *live, "--trace", str(out / "t.jsonl"), "--concurrency", "1"],
            "isolation": ["isolation", *live, "--tenants", "2", "--requests-per-tenant", "1", "--prompt-len", "40"]}
        for name, argv in commands.items():
            assert main([*argv, "--output", str(out / f"{name}.json")]) == 0, name
    shared = list(range(1, 49))  # three blocks of CachingFakeServer's 16 tokens, then each request's own two
    (out / "w.jsonl").write_text("".join(json.dumps({"id": f"r{i}", "max_tokens": 2, "prompt_token_ids": shared + [
        1000 + 100 * i + k for k in range(32)]}) + "\n" for i in range(4)))
    with CacheOffFakeServer() as g0, CachingFakeServer() as g1:
        assert main(["sweep", "--model", "m", "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url, "--workload",
                     str(out / "w.jsonl"), "--concurrency", "1,2", "--repeats", "2", "--ttft-slo-ms", "1000",
                     "--out", str(out / "sweep"), "--json"]) == 0
        assert main(["g0g1", "--model", "m", "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url, "--workload",
                     str(out / "w.jsonl"), "--concurrency", "1", "--out", str(out / "g0g1"), "--json"]) == 0
    with CacheOffFakeServer() as g0, CacheOffFakeServer() as g0b, CachingFakeServer() as g1, \
            CachingFakeServer() as g1b:
        assert main(["g0g1", "--model", "m", "--g0-endpoint", g0.base_url, "--g0-endpoint", g0b.base_url,
                     "--g1-endpoint", g1.base_url, "--g1-endpoint", g1b.base_url, "--replicas", "2", "--routing",
                     "round_robin,prefix_affinity", "--workload", str(out / "w.jsonl"), "--concurrency", "1",
                     "--out", str(out / "g0g1_replicas"), "--json"]) == 0
    prefixes = [[1000 * j + k for k in range(48)] for j in range(5)]  # five prefixes in turn: a cliff below 23 blocks
    (out / "p.jsonl").write_text("".join(json.dumps({"id": f"r{i}", "max_tokens": 2, "prompt_token_ids": [
        *prefixes[i % 5], 90000 + i]}) + "\n" for i in range(20)))
    assert main(["plan", "--workload", str(out / "p.jsonl"), "--block-size", "16", "--target-hit-rate", "0.3",
                 "--model", "tiny", "--memory-gib", "0.0001", "--points", "6", "--output", str(out / "plan.json"),
                 "--json"]) == 0
    hitrate = json.loads((out / "hitrate.json").read_text())
    hitrate["server"]["sglang_cache_hit_rate_gauge"] = {"value_after": [0.5], "note": "the last batch only"}
    hitrate["chat_template"] = {"tokenizer": "t", "explanation": "the template adds 3 tokens", "reason": None}
    (out / "hitrate.json").write_text(json.dumps(hitrate))
    return {**{name: out / f"{name}.json" for name in commands}, "sweep": out / "sweep" / "69_prefix_cache_sweep.json",
            "summary": out / "g0g1" / "69_prefix_cache.json",
            "summary_replicas": out / "g0g1_replicas" / "69_prefix_cache.json", "plan": out / "plan.json"}


def _hitrate_with(written, **sections) -> dict:
    return {**json.loads(written["hitrate"].read_text()), **sections}


DAMAGED = [
    # (case, result kind, a change to its JSON, the field the one line names)
    ("replicas: [{}]", "replicas", lambda r: {**r, "replicas": [{}]}, "replicas[0]"),
    ("prefix_spread.mean as a string", "replicas",
     lambda r: {**r, "routing": {**r["routing"], "prefix_spread": {"mean": "2", "definition": "d"}}},
     "routing.prefix_spread.mean"),
    ("an SGLang gauge without value_after", "hitrate",
     lambda r: {**r, "server": {**r["server"], "sglang_cache_hit_rate_gauge": {"note": "n"}}},
     "server.sglang_cache_hit_rate_gauge"),
    ("a sweep point's load value as a string", "sweep",
     lambda r: {**r, "points": [{**r["points"][0], "load": {**r["points"][0]["load"], "value": "4"}}]},
     "points[0].load.value"),
    ("a sweep's G1 hit rate above 1", "sweep",
     lambda r: {**r, "points": [{**r["points"][0], "g1": {**r["points"][0]["g1"], "hit_rate": 1.5}}]},
     "points[0].g1.hit_rate"),
    ("a sweep headline whose capacity gain is a string", "sweep",
     lambda r: {**r, "headline": {**r["headline"], "capacity_gain": "x2"}}, "headline.capacity_gain"),
    ("a chat_template explained without its tokenizer", "hitrate",
     lambda r: {**r, "chat_template": {"explanation": "adds 3 tokens"}}, "chat_template"),
    ("an isolation cost.salted that is a string", "isolation",
     lambda r: {**r, "cost": {**r["cost"], "salted": "x"}}, "cost.salted"),
    ("a per-policy prediction that is a string", "replicas",
     lambda r: {**r, "routing": {**r["routing"], "predicted_by_policy": {"round_robin": "37%"}}},
     "routing.predicted_by_policy.round_robin"),
]


@pytest.mark.parametrize("case, kind, damage, field", DAMAGED, ids=[c[0] for c in DAMAGED])
def test_report_of_a_damaged_result_is_one_line_naming_the_field(case, kind, damage, field, written, tmp_path,
                                                                  capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(damage(json.loads(written[kind].read_text()))))
    assert main(["report", str(path)]) == 1
    _one_line(capsys.readouterr().err, f"r.json.{field}")
    assert not path.with_suffix(".md").exists()


def test_report_renders_every_result_the_project_wrote(written, tmp_path, capsys):
    texts = {}
    for name, path in written.items():
        assert main(["report", str(path), "--output", str(tmp_path / f"{name}.md")]) == 0, capsys.readouterr().err
        texts[name] = (tmp_path / f"{name}.md").read_text()
        assert texts[name].startswith("#"), (name, texts[name][:200])  # a Markdown report, headed
    assert len(set(texts.values())) == len(written)  # each result rendered as itself


def test_report_of_a_sweep_is_the_markdown_and_plot_the_sweep_wrote(written, tmp_path, capsys):
    """The sweep file read back through its records (``core.sweep_records``) renders what the command wrote."""
    copy = tmp_path / "69_prefix_cache_sweep.json"
    copy.write_bytes(written["sweep"].read_bytes())
    assert main(["report", str(copy)]) == 0, capsys.readouterr().err
    assert copy.with_suffix(".md").read_text() == written["sweep"].with_suffix(".md").read_text()
    assert "capacity caching adds" in copy.with_suffix(".md").read_text()
    assert copy.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_of_a_plan_is_the_markdown_and_plot_the_plan_wrote(written, tmp_path, capsys):
    """``plan`` writes its Markdown and PNG itself; ``report`` re-renders a saved plan to the same Markdown, every
    section of it present (cliff, planned size, one block less, the memory budget's answer)."""
    plan = json.loads(written["plan"].read_text())
    assert plan["cliff"] and plan["plan"]["planned"] and plan["plan"]["one_block_less"] and plan["reverse"]
    copy = tmp_path / "plan.json"
    copy.write_bytes(written["plan"].read_bytes())
    assert main(["report", str(copy)]) == 0, capsys.readouterr().err
    text = copy.with_suffix(".md").read_text()
    assert text == written["plan"].with_suffix(".md").read_text()
    assert "| cliff (steepest drop) |" in text and "(below the target)" in text and "GiB buys" in text
    assert copy.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


DELETE = object()
MUTATIONS = (DELETE, "x", None, {}, [1], True, -1, 0.5, 10**20)


def _leaf_paths(value, prefix=()):
    """Every path into a JSON document; of a list only its first element (the others have its shape)."""
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaf_paths(child, (*prefix, key))
    elif isinstance(value, list) and value:
        yield from _leaf_paths(value[0], (*prefix, 0))


def _mutated(document, path, new):
    copy = json.loads(json.dumps(document))
    node = copy
    for key in path[:-1]:
        node = node[key]
    if new is not DELETE:
        node[path[-1]] = new
    elif isinstance(node, dict):
        del node[path[-1]]
    else:
        return None
    return copy


def _renders(result: dict, original: dict) -> None:
    """What ``report``, ``compare`` and ``--history`` read of a loaded result (the plot's failure is a warning)."""
    from tools.prefixbench.cli.report import RENDERERS
    from tools.prefixbench.report.markdown import render_compare
    from tools.prefixbench.report.outputs import history_line

    RENDERERS[result["schema"]][0](result)
    if result["schema"] == "prefixbench.hitrate/1":
        render_compare(result, original, ("a", "b"))
        json.dumps(history_line(result, "r.json"), allow_nan=False)


@pytest.mark.parametrize("kind", ["hitrate", "replicas", "sessions", "replay", "isolation", "sweep", "summary",
                                  "summary_replicas", "plan"])
def test_every_damaged_field_of_a_real_result_is_refused_in_one_line_or_renders(kind, written):
    """Each field of a result the project wrote, deleted or replaced by a value of another type: the loader
    refuses it (``InputError``) or every renderer copes. Anything else is a traceback waiting for a user."""
    from tools.prefixbench.core.records import validate

    original = json.loads(written[kind].read_text())
    crashes = []
    for path in _leaf_paths(original):
        for new in MUTATIONS:
            document = _mutated(original, path, new)
            if document is None:
                continue
            try:
                _renders(validate(document, original["schema"], "r.json"), original)
            except InputError:
                continue
            except Exception as exc:  # noqa: BLE001 - the finding is the exception itself
                crashes.append(f"{'.'.join(map(str, path))} = {new!r:.12}: {type(exc).__name__}: {exc}")
    assert not crashes, "\n".join(crashes[:20])


# -------------------------------------------------------------------- impossible server numbers -> null

def _hitrate_against(server, tmp_path, *flags) -> dict:
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-m", "tools.prefixbench", "hitrate", "--endpoint", server.base_url, *HIT,
                          "--block-size", "16", *flags, "--output", str(out)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    assert main(["report", str(out)]) == 0, "report refused the command's own result"
    return _strict(out.read_text())


def test_more_cached_tokens_than_the_prompt_holds_is_null_with_the_reason(tmp_path):
    """150 cached tokens for a 64-token prompt (no counters to fall back on): no hit rate, never 0.78."""
    with _Vllmish(metrics=None, cached=lambda p: 150 if len(p) == 64 else 0) as server:
        result = _hitrate_against(server, tmp_path)
    assert result["hit_rates"]["measured"] is None
    assert "dropped as impossible" in result["hit_rates"]["measured_reason"]
    for row in result["requests"]:
        assert row["cached_tokens"] is None and "exceeds the prompt's 64 tokens" in row["usage_reason"]


def test_a_negative_cached_count_is_null_and_the_request_still_counts(tmp_path):
    with _Vllmish(metrics=None, cached=lambda p: -5) as server:
        result = _hitrate_against(server, tmp_path)
    assert all(r["status"] == "ok" and r["cached_tokens"] is None and "negative" in r["usage_reason"]
               for r in result["requests"])
    assert result["hit_rates"]["measured"] is None


def test_counters_with_more_hits_than_the_phase_sent_are_null_with_the_reason(tmp_path):
    """Hits below queries, so the counters look sane, but more hit tokens than the measured prompts held."""
    server = _Vllmish()
    server.metrics = lambda: prometheus_text(*(n * sum(map(len, server.prompts)) for n in (10, 5)))
    with server:
        result = _hitrate_against(server, tmp_path)
    assert result["hit_rates"]["measured"] is None
    assert "do not fit" in result["hit_rates"]["measured_reason"]


def _live(command: str, server, tmp_path, *flags) -> dict:
    out = tmp_path / f"{command}.json"
    assert main([command, "--endpoint", server.base_url, "--model", "m", *flags, "--output", str(out)]) == 0
    assert main(["report", str(out)]) == 0, "report refused the command's own result"
    return _strict(out.read_text())


def test_sessions_with_ten_times_the_prompt_cached_show_no_rate_above_100_percent(tmp_path):
    with _Vllmish(metrics=None, cached=lambda p: 10 * len(p)) as server:
        result = _live("sessions", server, tmp_path, "--users", "2", "--turns", "2")
    assert all(t["cached_rate"] is None for t in result["per_turn"])
    assert all(r["cached_tokens"] is None and r["usage_reason"] for r in result["requests"])


def test_counters_that_count_more_hits_than_a_turn_sent_give_no_counter_rate(tmp_path):
    """Per turn the counters count ten times the prompt as hits (queries twenty times): no rate above 100%."""
    server = _Vllmish(cached=lambda p: 0)
    server.metrics = lambda: prometheus_text(*(n * sum(map(len, server.prompts)) for n in (20, 10))) + _cache_config()
    with server:
        result = _live("sessions", server, tmp_path, "--users", "1", "--turns", "3")
    assert result["per_turn"] and all(t["counter_hit_rate"] is None for t in result["per_turn"])


def test_isolation_counters_that_count_more_hits_than_a_request_sent_are_not_evidence(tmp_path):
    server = _Vllmish(cached=lambda p: 0)
    server.metrics = lambda: prometheus_text(*(n * sum(map(len, server.prompts)) for n in (20, 10))) + _cache_config()
    with server:
        result = _live("isolation", server, tmp_path)
    assert result["requests"] and all(r["counter_hit_tokens"] is None for r in result["requests"])


def test_sessions_with_a_lying_completion_count_keep_the_client_estimate_a_rate(tmp_path):
    with _Vllmish(cached=lambda p: 0, completion=1_000_000) as server:
        result = _live("sessions", server, tmp_path, "--users", "2", "--turns", "2")
    assert all(r["output_tokens"] is None and "completion_tokens 1000000" in r["usage_reason"]
               for r in result["requests"])
    assert all(t["client_estimate_rate"] is None or 0 <= t["client_estimate_rate"] <= 1 for t in result["per_turn"])


def test_isolation_with_ten_times_the_prompt_cached_claims_no_leak(tmp_path):
    with _Vllmish(metrics=None, cached=lambda p: 10 * len(p)) as server:
        result = _live("isolation", server, tmp_path, "--tenants", "2", "--requests-per-tenant", "1",
                       "--prompt-len", "40")
    assert result["isolation"]["verdict"] == "UNKNOWN" and not result["isolation"]["leaks"]
    assert not any(reason.endswith("blocks of ") for reason in result["isolation"]["reasons"])


def test_the_cli_path_of_these_commands_imports_neither_torch_nor_vllm():
    """Why the address-space limit is fair: the commands above never load the engines they model."""
    probe = ("import sys; from tools.prefixbench.cli import main; import tools.prefixbench.cli.plan, "
             "tools.prefixbench.run.plan, tools.prefixbench.run.hitrate; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'vllm'}))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr[-2000:]
