# 容量 | Capacity sweep on the conversation trace, both policies
require_setup()
if "conversation" in traces:
    conversation = traces["conversation"]
    trace_caps = [1000, 2000, 4000, 8000, 16000, 32000, 64000]
    sweep = {policy: [replay_trace(conversation, cap, policy) for cap in trace_caps] for policy in ("lru", "seed")}
    best = replay_trace(conversation, None)["token_hit_rate"]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for policy, marker in (("lru", "o"), ("seed", "s")):
        ax.plot([c * 512 for c in trace_caps], [r["token_hit_rate"] for r in sweep[policy]], marker=marker, label=policy)
    ax.axhline(best, color="gray", linestyle="--", label=f"unlimited ({best:.3f})")
    ax.axhline(TRACES["conversation"].paper_cache_ratio, color="red", linestyle=":", label="paper cache ratio (0.40)")
    ax.set(xscale="log", xlabel="cache capacity (tokens)", ylabel="token hit rate", title="Mooncake conversation trace")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
    for cap, a, b in zip(trace_caps, sweep["lru"], sweep["seed"]):
        print(f"{cap:>6} blocks: lru {a['token_hit_rate']:.4f} (orphans {a['orphan_blocks']}) | "
              f"seed {b['token_hit_rate']:.4f} (orphans {b['orphan_blocks']})")
elif not GRADING:
    print(say("没有 conversation trace，跳过容量扫描。", "no conversation trace: capacity sweep skipped"))
