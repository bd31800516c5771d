# 探索器 | Explorer: widgets where they work, a plain function call everywhere
require_done("simulate_prefix_cache")


def per_request_hits(prompts, block_size, capacity_blocks):
    """Your simulate_prefix_cache, one more request each time: the hit tokens of each request."""
    before, hits = 0, []
    for n in range(1, len(prompts) + 1):
        reused = simulate(prompts[:n], block_size, capacity_blocks)["reused_tokens"]
        hits.append(reused - before)
        before = reused
    return hits


def explore(capacity_blocks=120, block_size=16, policy="lru"):
    result = POLICY[policy](docs.prompts, block_size, capacity_blocks)
    if policy == "lru":
        result["per_request_hit_tokens"] = per_request_hits(docs.prompts, block_size, capacity_blocks)
    fig, ax = plt.subplots(figsize=(9, 2.6))
    ax.bar(range(len(docs.prompts)), result["per_request_hit_tokens"], width=1.0)
    ax.set(xlabel="request", ylabel="hit tokens", ylim=(0, 704),
           title=f"capacity={capacity_blocks} blocks, block_size={block_size}, policy={policy}")
    fig.tight_layout()
    plt.show()
    print(f"token reuse {result['token_reuse_rate']:.3f} | request hit rate {result['cache_hit_rate']:.3f} | "
          f"evictions {result['eviction_count']} | orphans {result['orphan_blocks']}")


widgets_ready = False
if not GRADING:
    try:
        import ipywidgets as widgets
        try:  # Colab renders ipywidgets 8 only with its custom widget manager
            from google.colab import output as colab_output
            colab_output.enable_custom_widget_manager()
        except ImportError:
            pass
        widgets.interact(
            explore,
            capacity_blocks=widgets.IntSlider(value=120, min=10, max=400, step=10, description="capacity"),
            block_size=widgets.Dropdown(options=[8, 16, 32, 64, 128], value=16, description="block_size"),
            policy=widgets.Dropdown(options=["lru", "seed"], value="lru", description="policy"),
        )
        widgets_ready = True
    except Exception as exc:  # no ipywidgets, or no frontend support
        print(say(f"ipywidgets 不可用（{type(exc).__name__}），改用普通函数调用。",
                  f"ipywidgets unavailable ({type(exc).__name__}): a plain function call instead."))
if not widgets_ready:
    explore(capacity_blocks=120, block_size=16, policy="lru")
    print(say("在下一个单元格里换参数再调用，例如 explore(capacity_blocks=80, block_size=16, policy='seed')",
              "Call it again with other values in the next cell, e.g. explore(capacity_blocks=80, block_size=16, policy='seed')"))
