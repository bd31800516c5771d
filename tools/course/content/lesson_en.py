"""The English edition's prose: one entry per Chinese text of lesson.py, under the same name.

``lesson.cells("en")`` builds the English notebook from these and the cells both editions share (the code
cells, whose comments and printed messages are bilingual, and every test cell, word for word), so both editions
have the same cells, grade ids and points. Section titles stay bilingual in both editions.
"""

from __future__ import annotations

CHAPTER_MAP = """\
```
22 vLLM             paged KV and serving behavior
      │
24 RadixAttention   prefix reuse and tree lookup
      │
34 Prefix caching   chunked prefill and cache hit behavior
      │
      ▼
69 Prefix benchmark hit rate + TTFT + maintenance cost + delivery decision
```"""
"""Where this chapter sits among the course's chapters (both editions, as is)."""

EN: dict[str, str] = {}
EN["INTRO_BODY"] = """\
Difficulty: Hard ｜ Environment: CPU-first ｜ Tags: inference optimisation, prefix cache, benchmark comparison ｜ For: practising project decisions

{links}

---

**Overview | 本节导读**

This chapter asks you to decide, from the reuse pattern of real requests, whether prefix caching is worth deploying.
Fix the request distribution, the block (chunk) policy and the baseline first, then compare hit rate, TTFT, prefill
savings and the cost of maintaining the cache. The chapter runs **measure → compare → decide**: first work out the
cache's life cycle exactly on a CPU, then compare with the baseline, and finally answer accept / tune / reject.

- By default one stable backend runs the G0 (cache off) / G1 (prefix cache) comparison; SGLang's RadixAttention is an
  optional extension and is never mixed into the basic comparison as a second variable.
- Scope: this project owns prefix reuse, the hit rate and the savings on repeated prefill. For memory it only reuses
  the cache capacity and peak-memory observations; chapter 70 owns queue scheduling, 71 the MLA cache layout. A hit
  rate is not a general memory optimisation.

**Keywords | 关键词**: prefix cache, block hash, hit rate, LRU eviction, TTFT, overhead, deployment

**Prerequisites | 前置阅读**: 22. vLLM PagedAttention ｜ 24. SGLang RadixAttention ｜
34. Prefix Caching and Chunked Prefill ｜ 68. Speculative Decoding Benchmark

**Next | 相关阅读**: 70. Serving Scheduler Benchmark (how cache hits and request scheduling interact, with the same
way of recording workloads)

> ⚠️ An OpenAI-compatible API usually does not return the prefix-cache hit rate. A real backend experiment can compare
> TTFT and throughput on a shared-prefix workload, but a latency change alone never tells you the hit rate; the hit
> rate must come from backend metrics (for example vLLM's `prefix_cache_hits` / `prefix_cache_queries` counters),
> logs or a dedicated observability endpoint."""

EN["LINKS"] = """\
🚀 **Run in the cloud | 云端运行**

[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})

- **Colab**: open the student notebook with the badge above and run it from the first code cell; it clones the course
  repository and installs whatever is missing (only matplotlib, ipywidgets, requests).
- **ModelScope (recommended in mainland China)**: start a free instance at
  [ModelScope Notebook](https://modelscope.cn/my/mynotebook), open a Terminal, run `git clone {clone}`, then open
  `{path}`. When GitHub is slow, set the environment variable `PREFIXBENCH_REPO_URL` to a mirror first.
- The CPU part (exercises, simulation, trace replay) needs no GPU; only the optional Step 11 needs a GPU and vLLM."""

EN["STEP1"] = """\
## Step 1: Define inputs, variables and outputs | 明确 benchmark 的输入、变量和输出

The input of this project is a set of **already tokenised** requests. Fix the shared prefixes, the suffix
distribution, the generation length, the concurrency and the backend first, then change only the cache policy:
only then can a gain be attributed to prefix reuse.

| Item | Convention in this project |
| --- | --- |
| Input | a shared-prefix request set (token ids), generation length, concurrency, model and backend |
| Single variable | cache off / prefix cache; extensions compare block size, eviction policy or backend |
| Observed metrics | hit rate, reused tokens, TTFT, TPOT, throughput, P99, peak memory and maintenance cost |
| Output | a baseline / candidate comparison table and an accept / tune / reject decision |

Why token ids: the same text becomes different token sequences under different tokenizers and chat templates, so
**equal strings do not mean equal prefixes**. A cache only sees tokens."""

EN["STEP2"] = """\
## Step 2: Fix the request distribution and the baseline | 先验证请求分布和 baseline

Shared prefixes must still be shared after tokenisation. Run G0 with the cache off first, then G1 with one cache
policy on:

| Fixed | G0 baseline | G1 candidate |
| --- | --- | --- |
| Requests | the same shared-prefix workload | the same as G0 (the same `workload_id`) |
| Model and backend | a fixed version | the same as G0 |
| batch / concurrency | fixed | the same as G0 |
| The one variable | cache off | prefix cache policy |
| Hit evidence | not applicable | backend metrics, logs or a dedicated endpoint |

`workload_id` is a hash of the workload's content (see `tools.prefixbench.workload.Workload.workload_id`): two runs
can only be compared when their `workload_id` is the same, and the exercise functions check that."""

EN["STEP3"] = """\
## Step 3: Compare gains and costs on one scale | 用统一口径比较收益与代价

The hit rate is not the goal. Every group records at least:

| Group | Fields | Question |
| --- | --- | --- |
| Reuse | hit rate, reused tokens, prefill work reduction | how much repeated work is saved |
| Performance | TTFT, TPOT, E2E, throughput, P99 | does the request path really get faster |
| Resources | peak memory, cache blocks, eviction | does maintaining the cache add pressure |
| Quality | status, task quality, OOM | are the output constraints kept |

"Hit rate" has three units, and a report must say which one it uses (`hit_rate_unit`):

- **token** `token_reuse_rate` = hit tokens / all prompt tokens (vLLM's `prefix_cache_hits / prefix_cache_queries`);
- **block** `block_hit_rate` = full blocks hit / full blocks looked up;
- **request** `cache_hit_rate` = the share of requests that hit at least one block.

TODO 0 returns the request-level `cache_hit_rate` and the token-level `token_reuse_rate`; TODOs 1–3 take any unit
and only require the runs they compare to share it (`hit_rate_unit`). Step 10 decides on the **token** level
(`hit_rate = token_reuse_rate`, `hit_rate_unit="token"`), the unit of a real backend's counters (vLLM)."""

EN["STEP4"] = """\
## Step 4: Decide: accept / tune / reject | 输出 benchmark 决策

TODO 3's rule (exactly its docstring's; `gain` = `hit_rate_gain`, `Δttft` = `ttft_delta_ms`, `Δoverhead` = `overhead_delta`):

| Decision | When | Next step (`next_action`) |
| --- | --- | --- |
| accept | `gain >= min_hit_rate`, `Δttft < 0`, `Δoverhead <= max_overhead` | `promote_to_serving_eval`: more requests, concurrency regression |
| tune | `gain >= min_hit_rate`, `Δttft < 0`, but `Δoverhead > max_overhead` | `refine_chunk_or_eviction_policy`: change one variable and rerun |
| reject | everything else: `gain < min_hit_rate` (even with a faster TTFT), or `Δttft >= 0` | `fallback_to_no_cache`: turn the cache off or change the workload |

The function looks at these three numbers only. A real report also asks whether TTFT is stable, whether anything
ran out of memory and whether output quality held: you judge those in the report, not TODO 3.

{chapter_map}

| Part | Must record | Why |
| --- | --- | --- |
| baseline | request reuse pattern, TTFT, cache-off settings | makes the comparison valid |
| candidate | hit rate, TTFT, maintenance overhead | explains where the gain comes from |
| comparison | hit-rate gain, latency change, overhead change | decides whether to adopt it |
| decision | accept / tune / reject | the benchmark's conclusion |""".format(chapter_map=CHAPTER_MAP)

EN["STEP5"] = """\
## Step 5: The cache model: blocks, prefix keys and eviction | 缓存模型：block、前缀 key 与淘汰

The CPU part checks token prefix matching, full-block reuse, cache capacity and eviction only; it does **not**
model real KV-cache memory, CUDA latency or a backend's hit rate. Real engines (vLLM v1, SGLang) follow four rules:

1. **Only full blocks are cached.** A prompt is cut into blocks of `block_size` tokens; a trailing partial block
   neither hits nor is cached.
2. **A block's key is its whole prefix**: the parent block's key + this block's tokens (vLLM v1's chained block
   hashes, SGLang's radix-tree paths and the Mooncake trace's `hash_ids` all work this way). The same tokens after a
   different prefix are a different block, because KV depends on every token before it. Keys of
   `(block_index, content)` would count a block with the same position and content but a different prefix as a hit.
3. **Find the longest cached prefix from block 0 and stop at the first miss.** Later blocks are of no use even if
   they are still cached.
4. **LRU eviction that never splits a prefix**: a running request's blocks are pinned (reference count > 0, not
   evictable); when it ends they go back to the LRU queue **tail first** (vLLM v1 frees them in reverse order), so
   among equally recent blocks the deepest is evicted first, which is "evict the least recently used leaf" (what
   SGLang's radix tree does). The queue is a doubly linked list / `OrderedDict`: O(1) per operation.

The next two cells show rules 2 and 4 with the reference library `tools.prefixbench`."""

EN["EXERCISES"] = """\
## Exercises | 练习: 4 TODOs (TODO 0–3)

First check the cache's life cycle on the CPU, then turn results into comparable benchmark reports. Each
function's docstring is what is graded:

- **TODO 0 `simulate_prefix_cache`**: simulate the cache by Step 5's four rules (full blocks only, prefix keys, stop
  at the first miss, pinned blocks and tail-first LRU, O(1) eviction). Skip empty requests; a rate with a zero
  denominator is `None` (no data is not 0%).
- **TODO 1 `summarize_prefix_cache`**: summarise several runs of one workload; a missing metric is an error, never 0.
- **TODO 2 `compare_prefix_cache_to_baseline`**: candidate − baseline; mind the direction of each gain and delta.
- **TODO 3 `recommend_prefix_cache_run`**: check the thresholds first, then answer accept / tune / reject.

> The chapter's original reference code keys blocks by `(block_index, content)`, refreshes timestamps in prefix
> order (so the head is evicted first) and scans the whole cache with `min()` on every eviction. All three differ
> from real engines; these exercises are graded by the real engines' semantics (why: Step 7).

A TODO's number is its graded cells' number: TODO n's function is in the `exN-…` cell, its visible test is
`test-exN-visible`, its hidden tests are `hidden-exN-…`. Each exercise is followed by a visible test; grading also runs the hidden tests at the end of the notebook, which
check every rule written in the docstrings. When a visible test fails it first prints the diagnosis of its exercise
(the most likely known mistake and where to look), then raises. Order: run the cells above first, then do the four
TODOs in turn. (The stubs say `请先完成 TODO 代码！`: "finish the TODO first".)"""

EN["DIAGNOSE_MD"] = """\
### Diagnosis: which mistake is it? | 诊断：最可能错在哪里

Tests say *whether* an answer is wrong; the next cell runs small probes (visible examples only) and names the
**most likely known mistake and what to look at**. To check one exercise only:
`self_check(globals(), exercises=["simulate_prefix_cache"])`. Grading runs the same diagnosis with hidden probes
too and puts it at the end of your feedback (without showing hidden inputs)."""

EN["STOP"] = """\
---

## 🛑 STOP HERE 🛑

Try to complete the code yourself and make the tests pass first. What follows **runs on your own functions**:
Step 6 checks your implementation against the reference library, then your `simulate_prefix_cache` measures the
effect of capacity, block size and eviction policy, a real trace is replayed, and your TODOs 1–3 make the decision.

> **The library rule**: `tools.prefixbench` is the reference implementation; reading it is fine, and it is only
> called inside the self-check (the diagnosis, Step 6's check). Calling or copying it in a submission (for example
> `from tools.prefixbench import ...` in an exercise) is flagged.

---"""

EN["SELF_CHECK_MD"] = """\
## Step 6: Measure: check your code, then capacity and block size | 测量：先核对实现，再看容量与 block 大小

First check your `simulate_prefix_cache` against the reference library, field by field, on a few hundred small
random workloads; when they disagree the case is **shrunk** to its simplest form (fewest requests, shortest prompts,
smallest block and cache that still disagree) and printed, small enough to trace by hand."""

EN["MEASURE_MD"] = """\
**The workload**: 120 requests of 704 tokens each; the first 600 tokens are one of 3 long documents (in turn, like
RAG or a long system prompt), the rest a distinct question. Made by `generate_shared_prefix_workload`: the same seed
gives the same workload every time.

- Left: capacity (in blocks) from small to large. While the cache cannot hold "3 documents + the running request",
  LRU always pushes out the document needed next and the hit rate is 0: LRU's **cliff**. Past the working set it
  quickly rises to its ceiling.
- Right: block size. 600 is not a multiple of 32, 64 or 128, so the last partial block of each document can never be
  reused, and with unlimited capacity larger blocks hit less. Under a fixed token budget (the same KV memory) the
  conclusion can flip: with large blocks each document caches only 512 tokens and all three fit; small blocks try to
  cache whole documents, do not fit, and push each other out. **Tune block size and capacity together**, never one
  alone."""

EN["COMPARE_MD"] = """\
## Step 7: Compare: two eviction policies | 对比：两种淘汰策略

The chapter's original reference code differs from real engines in three ways, and each one distorts the
conclusion:

1. **key = `(block_index, content)`**: a block with the same position and content after a different prefix counts
   as a hit (Step 5's r3 = A D): the hit rate is too high.
2. **timestamps refreshed in prefix order**: a request's head is "older" than its tail, so the head is evicted first.
   The tail stays in the cache but can never be found without its head: an **orphan block**. Real engines pin running
   blocks and release them tail first into the LRU queue.
3. **`min(cache, key=cache.get)` on every eviction**: O(capacity), slow for a large cache; real engines use a doubly
   linked list, O(1).

Below, two policies side by side: `lru` is your `simulate_prefix_cache` (the real engines' semantics), `seed` the
original head-first eviction (run on the library's block model `PrefixCache(policy="seed")`, with keys already
fixed to prefix keys, so eviction order is the only variable)."""

EN["COST_MD"] = """\
At the same capacity, head-first eviction drops the hit rate straight to 0 over a whole range: with 3 documents in
turn, each document's head is always pushed out first and its tail becomes an orphan that takes up room. Tail-first
release keeps the limited capacity for the most useful part, the prefix heads.

Now point 3, the cost of eviction: the original `min()` scan grows linearly with the capacity, `OrderedDict`'s
`popitem(last=False)` does not depend on it."""

EN["TRACE_MD"] = """\
## Step 8: Real trace: replaying Mooncake | 真实 trace：回放 Mooncake

A synthetic workload has whatever reuse we give it; real reuse patterns need real requests. Mooncake (Kimi's serving
system, FAST'25 paper *Mooncake: Trading More Storage for Less Computation*) published anonymised traces: one request
per line, `input_length` in tokens, and `hash_ids`, the chained prefix hash of each 512-token block: exactly Step 5's
rule 2.

- On first use the library downloads the traces (about 3 MB and 1 MB, sha256-checked) and caches them in
  `~/.cache/prefixbench/traces`; if you already have the files, set `PREFIXBENCH_TRACE_DIR` to their folder.
  Offline and without the files, the cells below print how to get them instead of failing.
- The paper's Table 2 gives each trace's cache ratio (the most that can hit with unlimited capacity): about 40% for
  conversation, 66% for synthetic. We replay the same data with unlimited capacity and compare."""

EN["TRACE_EXPLAIN"] = """\
Our token-level rate is a few points below the paper's (conversation about 0.37 against 0.40, synthetic about 0.65
against 0.66), and the reason is the unit:

- here **only full 512-token blocks can hit**: the last partial block of every request is always a miss, and it is
  part of the prompt;
- the token-level denominator is every prompt token; the block-level rate (blocks hit / full blocks) is closer to the
  paper, and for synthetic almost equal;
- the paper's table gives rounded summary values and does not say exactly how it counts (partial last blocks as
  whole ones? per block?).

Conclusion: **agree on the unit before comparing numbers**; when a few points differ, check the definitions before
suspecting the implementation. Next, the effect of capacity (the paper's Fig. 9 is this plot too: more capacity,
more hits, with diminishing returns)."""

EN["TRACE_OUTRO"] = """\
On the real conversation trace the two policies hit about equally (most conversation requests are short and the
reuse comes mostly from earlier turns of the same conversation); the difference is the orphan blocks the seed
policy leaves, which take up capacity and never hit again. **Which policy is better depends on the workload**:
that is why it is measured on a real trace instead of decided by intuition."""

EN["EXPLORER_MD"] = """\
## Step 9: Explore interactively | 交互探索

Move the sliders to change capacity, block size and eviction policy, and watch the hits on the document workload.
Where ipywidgets do not work (Colab's support for ipywidgets 8 comes and goes), edit and run
`explore(capacity_blocks=..., block_size=..., policy=...)` instead: the same plot."""

EN["DECIDE_MD"] = """\
## Step 10: From measurement to decision | 从测量到决策

The CPU simulation gives the **hit rate** (exactly); TTFT needs a real backend. To walk through the process anyway,
the cell below estimates TTFT with a linear model **clearly labelled as an assumption**:
`TTFT ≈ 15 ms + 0.05 ms × the missed tokens per request`, with an assumed overhead. The three scenarios land on
accept, tune and reject; the hit rates come from your TODO 0, the summary, comparison and decision from your
TODOs 1–3. Note the third scenario: the modelled TTFT is faster, but the hit-rate gain misses the threshold, so it
is **still reject**."""

EN["GPU_MD_HEAD"] = """\
## Step 11 (optional): real backend G0 / G1 | Step 11（可选）: GPU/backend 实验

**One results table**: fill in the common conditions first, then each group's results; model, backend, workload
and generation length must be traceable within a row."""

EN["GPU_MD_TAIL"] = """\
With `RUN_REAL_BACKEND` set to `True`, the code below starts G0 / G1 in turn (vLLM with prefix caching off / on) and
saves `69_prefix_cache_g0_cache_off.json`, `69_prefix_cache_g1_prefix_cache.json` and the summary manifest
`69_prefix_cache.json`. When the backend exposes no hit metrics, the report must keep
`hit_rate_evidence=backend_metrics_or_logs_required`; a TTFT change never stands in for the hit rate.

- **Evidence boundary**: the CPU simulation checks prefix matching, block reuse and eviction; a real hit rate must
  come from backend metrics, logs or a dedicated endpoint.
- Groups as in chapter 66: G0 prefix cache off, G1 one cache policy on the same shared-prefix workload, and only G2
  compares backends or cache policies. Do G0 / G1 with vLLM first; SGLang is a G2 extension.
- A server that starts is no proof that prefix caching is on: the result must keep cache_policy, the hit-rate
  evidence and the invalidation overhead.
- While grading (nbgrader) this whole section is skipped; with the default `RUN_REAL_BACKEND = False` nothing is
  downloaded and no GPU is used. The switch is in the first cell below (yours to edit), the experiment in the
  second."""

EN["HIDDEN_MD"] = """\
## Hidden grading tests | 评分用隐藏测试

In the student notebook the cells below hold only comments: at grading time (nbgrader autograde) the full hidden
tests are put back here and scored. They check every rule written in the TODO docstrings: partial trailing blocks,
prefix keys, stopping at the first miss, tail-first LRU, O(1) eviction (5 s on a large workload), missing metrics,
the direction of gains and deltas, and threshold checks. They come last, so they change no output above; feedback
shows each cell's score and its failure hint only."""

EN["GPU_TABLE"] = """\
| Group | model / backend / dtype | prompt / generated tokens | batch / concurrency | cache policy | hit rate / evidence | reused tokens | TTFT (ms) | TPOT (ms/token) | E2E (ms) | P99 (ms) | throughput (token/s) | peak memory (MiB) | quality / status | decision |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| G0 | to fill in | to fill in | 1 / 1 | off | n/a | 0 | to measure | to measure | to measure | to measure | to measure | to measure | to fill in | to decide |
| G1 | to fill in | to fill in | 1 / 1 | prefix cache | to measure / metrics or logs | to measure | to measure | to measure | to measure | to measure | to measure | to measure | to fill in | to decide |
| G2 | to fill in | to fill in | to fill in | to fill in | to measure / evidence source | to measure | to measure | to measure | to measure | to measure | to measure | to measure | to fill in | to decide |
| common conditions | model revision, server version, GPU, PyTorch/CUDA, workload file, warmup / repeats | same as G0/G1 | variables named in the notes only | the actual switch | the hit rate is never inferred from TTFT | token unit recorded | one unit | one unit | one unit | one P99 definition | output token/s | `torch.cuda.max_memory_allocated` or backend metrics | OOM and quality recorded | accept / tune / reject |"""

EN_CODE_LINES: dict[str, str] = {
    'EDITION = "zh"  # 中文版：提示中英双语 | the Chinese edition: messages in both languages':
        'EDITION = "en"  # the English edition: every message in English',
    "# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。":
        "# In the student notebook this cell holds only these comments; grading runs the hidden tests here.",
    "# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试（可以先用 Step 6 的“对照参考库”单元格自查）。":
        "# In the student notebook this cell holds only these comments; grading runs the hidden tests here "
        "(check yourself first with Step 6's check against the library).",
}
"""Whole lines of the shared code cells that the English edition says in English: the setup cell's EDITION
(which picks the language of every message a cell prints) and the hidden-test cells' comment. Nothing else of
the code differs between the editions (tests/course/release/test_english_edition.py checks it)."""


def english_code(source: str) -> str:
    """A shared code cell as the English edition has it: each line of EN_CODE_LINES in English."""
    return "\n".join(EN_CODE_LINES.get(line, line) for line in source.split("\n"))
