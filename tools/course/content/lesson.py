"""Chapter 69, "Prefix Caching Benchmark | 前缀缓存基准", as an ordered list of notebook cells.

The one source of truth for solutions/69_prefix_cache_benchmark.ipynb (written by tools/course/build/notebook.py).
Every cell has a stable id, which is also its nbgrader grade id; ``role`` says what nbgrader does with it:

    readonly  locked lesson cell (its source is restored at grading time if a student edits it)
    solution  an exercise: the ``### BEGIN/END SOLUTION`` region becomes the seed's stub in the release
    test      a graded test cell worth ``points`` (hidden tests sit between ``### BEGIN/END HIDDEN TESTS``)
    plain     no nbgrader metadata: a scratch cell students are meant to change (the GPU switch, the explorer)

The lesson follows measure -> compare -> decide. After the exercises it runs on the student's own functions
(figures, policy comparison, decision, the GPU section's prediction); the library's simulator and decision
functions appear only inside the self-check (tools.course.diagnosis). The four exercises (exercises.py) are
self-contained, as students write them.
"""

from __future__ import annotations

from .. import config
from . import exercises as ex
from .cells import Cell, code, md, plain, solution, test
from .lesson_en import CHAPTER_MAP, EN, english_code


def notebook_path(lang: str = config.DEFAULT_LANGUAGE) -> str:
    """The edition's notebook path inside the repository students clone (the same in the course repository)."""
    return config.release_notebook(lang).relative_to(config.REPO_ROOT).as_posix()


def _links_markdown(lang: str = config.DEFAULT_LANGUAGE) -> str:
    url = config.colab_url(notebook_path(lang))
    opened = f"{config.REPO_SLUG.split('/')[-1]}/{notebook_path(lang)}"
    if lang == "en":
        return EN["LINKS"].format(url=url, clone=config.clone_url(), path=opened)
    return f"""\
🚀 **云端运行 | Run in the cloud**

[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})

- **Colab**：点上面的徽章打开学生版 notebook，从第一个代码单元格开始运行；它会自动 clone 课程仓库并补装缺少的包
  （只有 matplotlib、ipywidgets、requests）。
- **魔搭 ModelScope（国内推荐）**：在 [ModelScope Notebook](https://modelscope.cn/my/mynotebook) 启动免费实例，
  打开 Terminal 运行 `git clone {config.clone_url()}`，再打开 `{opened}`。
  GitHub 访问慢时，先设置环境变量 `PREFIXBENCH_REPO_URL` 指向镜像仓库。
- CPU 部分（练习、模拟、trace 回放）不需要 GPU；只有可选的 Step 11 需要 GPU 和 vLLM。"""


TITLE = "# 69. Prefix Caching Benchmark | 前缀缓存基准"
TITLE_EN = f"{TITLE} (English edition)"

INTRO_BODY = """\
难度：Hard ｜ 环境：CPU-first ｜ 标签：推理优化, Prefix Cache, 基准对比 ｜ 目标人群：项目决策练习者

{links}

---

**本节导读 | Overview**

本节要你根据真实请求的复用模式，判断前缀缓存（prefix caching）值不值得部署。先固定请求分布、block（chunk）
策略和 baseline，再比较 hit rate、TTFT、prefill 节省量与缓存维护开销。整节按 **measure → compare → decide**
组织：先在 CPU 上把缓存的生命周期算清楚，再对照 baseline，最后给出 accept / tune / reject。

- 默认用一个稳定 backend 完成 G0（cache off）/ G1（prefix cache）对照；SGLang 的 RadixAttention 作为可选扩展，
  不和基础对照混成同一个变量。
- 主责与复用边界：本项目只负责前缀复用、命中率和重复 prefill 的收益。显存优化只复用 cache 容量与峰值显存观察；
  70 负责队列调度，71 负责 MLA 的 cache 表示。不能把命中率直接解释成通用的显存优化。

**关键词 | Keywords**：prefix cache, block hash, hit rate, LRU eviction, TTFT, overhead, deployment

**前置阅读 | Prerequisites**：22. vLLM PagedAttention ｜ 24. SGLang RadixAttention ｜
34. Prefix Caching and Chunked Prefill ｜ 68. Speculative Decoding Benchmark

**相关阅读 | Next**：70. Serving Scheduler Benchmark（检查缓存命中与请求调度的关系，沿用同样的 workload 记录方式）

> ⚠️ OpenAI-compatible API 通常不会直接返回 prefix-cache hit rate。真实 backend 实验可以用共享前缀 workload 比较
> TTFT 和吞吐，但不能仅凭延迟变化反推出命中率；命中率必须来自 backend metrics（例如 vLLM 的
> `prefix_cache_hits` / `prefix_cache_queries` 计数器）、日志或专用观测接口。"""

SETUP = f'''\
# 环境准备 | Setup: find the course repository (or fetch it in Colab / ModelScope) and import the library.
EDITION = "zh"  # 中文版：提示中英双语 | the Chinese edition: messages in both languages
SETUP_DONE = False  # set at the end of this cell; every later cell checks it (require_setup)


def say(zh, en):
    """A message in this notebook's language (the Chinese edition shows both)."""
    return en if EDITION == "en" else f"{{zh}} | {{en}}"


class SetupProblem(Exception):
    """Shown as its message only (no traceback): what went wrong and what to do."""

    def _render_traceback_(self):
        return str(self).splitlines()


def require_setup():
    """The first line of every later cell: after a failed setup it says so, instead of a NameError."""
    if not globals().get("SETUP_DONE"):
        raise SetupProblem(say("请先运行环境准备单元格（第一个代码单元格），直到它成功，再运行这个单元格。",
                               "Run the setup cell first (the first code cell) until it succeeds, then run this cell."))


_TRY = {{  # the smallest call of each exercise, to tell "not done yet" apart
    "simulate_prefix_cache": (([[1, 2]],), {{"block_size": 1, "capacity_blocks": 2}}, "TODO 0"),
    "summarize_prefix_cache": (([],), {{}}, "TODO 1"),
    "compare_prefix_cache_to_baseline": (({{"hit_rate": 0.0, "ttft_ms": 1.0, "overhead": 0.0}},) * 2, {{}}, "TODO 2"),
    "recommend_prefix_cache_run": (({{"hit_rate": 0.0, "ttft_ms": 1.0, "overhead": 0.0}},) * 2 + (0.5, 0.1), {{}},
                                   "TODO 3"),
}}


def require_done(*names):
    """The lesson after the exercises runs on your functions: say which TODO to finish first, if any."""
    require_setup()
    for name in names:
        args, kwargs, todo = _TRY[name]
        if not callable(globals().get(name)):
            raise SetupProblem(say(f"这一步用你的 {{name}}：先运行定义它的单元格（{{todo}}）。",
                                   f"This step runs your {{name}}: run its cell ({{todo}}) first."))
        try:
            globals()[name](*args, **kwargs)
        except NotImplementedError:
            raise SetupProblem(say(f"这一步用你的 {{name}}：先完成 {{todo}}（它的可见测试通过之后再来）。",
                                   f"This step runs your {{name}}: finish {{todo}} first (until its visible test "
                                   "passes).")) from None
        except Exception:  # noqa: BLE001 - a wrong answer still runs here; its tests and the self-check say why
            pass


import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO_SLUG = "{config.REPO_SLUG}"  # configured in tools/course/config.py
REPO_URL = os.environ.get("PREFIXBENCH_REPO_URL") or f"https://github.com/{{REPO_SLUG}}.git"
REPO_DIRNAME = REPO_SLUG.split("/")[-1]
CLONE_TIMEOUT_S = 180
GRADING = bool(os.environ.get("NBGRADER_EXECUTION"))  # set by nbgrader while it grades this notebook
QUICK = GRADING  # while grading, the lesson's sweeps use fewer points (same figures, coarser)


def setup_problem(reason):
    if EDITION == "en":
        return SetupProblem(f"""\\
Setup failed: {{reason}}
Fix it one of two ways, then re-run this cell:
  1. use a mirror of the repository:
       os.environ["PREFIXBENCH_REPO_URL"] = "https://<mirror>/{{REPO_DIRNAME}}.git"
  2. use a checkout you uploaded (unzip it first):
       os.environ["PREFIXBENCH_REPO"] = "/path/to/{{REPO_DIRNAME}}"
Add a code cell above this one with one of these lines (after import os) and run it, or use %env PREFIXBENCH_REPO=/path.""")
    return SetupProblem(f"""\\
环境准备失败 | Setup failed: {{reason}}
解决方法（任选其一），然后重新运行本单元格 | Fix it one of two ways, then re-run this cell:
  1. 用镜像仓库 | use a mirror of the repository:
       os.environ["PREFIXBENCH_REPO_URL"] = "https://<镜像 mirror>/{{REPO_DIRNAME}}.git"
  2. 用已上传的仓库 | use a checkout you uploaded (unzip it first):
       os.environ["PREFIXBENCH_REPO"] = "/path/to/{{REPO_DIRNAME}}"
在本单元格上方新建一个代码单元格，写入其中一行（先 import os）并运行；也可以写 %env PREFIXBENCH_REPO=/path。
Add a code cell above this one with one of these lines (after import os) and run it, or use %env PREFIXBENCH_REPO=/path.""")


def find_repo():
    """The checkout that holds tools/prefixbench: $PREFIXBENCH_REPO, the current folder or a parent, or a clone."""
    here = Path.cwd().resolve()
    for start in (os.environ.get("PREFIXBENCH_REPO"), here, *here.parents,
                  Path("/content") / REPO_DIRNAME, Path.home() / REPO_DIRNAME, here / REPO_DIRNAME):
        if start and (Path(start) / "tools" / "prefixbench" / "__init__.py").is_file():
            return Path(start).resolve()
    return None


def clone_repo(url, target):
    """git clone --depth 1 with a time limit; the reason it failed in one line, or None."""
    print(f"clone {{url}} -> {{target}}")
    try:
        done = subprocess.run(["git", "clone", "--depth", "1", "--quiet", url, str(target)], capture_output=True,
                              text=True, timeout=CLONE_TIMEOUT_S, env={{**os.environ, "GIT_TERMINAL_PROMPT": "0"}})
    except FileNotFoundError:
        return say("没有 git 命令", "git is not installed")
    except subprocess.TimeoutExpired:
        return say(f"git clone 超过 {{CLONE_TIMEOUT_S}} s 未完成", f"git clone took over {{CLONE_TIMEOUT_S}} s")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return say(f"git clone {{url}} 失败（{{last}}）", f"git clone {{url}} failed ({{last}})")
    return None


REPO_ROOT = find_repo()
if REPO_ROOT is None and os.environ.get("PREFIXBENCH_REPO"):
    raise setup_problem(say(f"PREFIXBENCH_REPO={{os.environ['PREFIXBENCH_REPO']}} 下没有 tools/prefixbench",
                            f"PREFIXBENCH_REPO={{os.environ['PREFIXBENCH_REPO']}} holds no tools/prefixbench"))
if REPO_ROOT is None and not GRADING:
    failure = clone_repo(REPO_URL, Path.cwd() / REPO_DIRNAME)
    if failure:
        raise setup_problem(failure)
    REPO_ROOT = Path.cwd() / REPO_DIRNAME
if REPO_ROOT is None:
    raise setup_problem(say("找不到课程仓库 tools/prefixbench", "the course repository (tools/prefixbench) is not here"))
# The CPU part needs only these; Colab and ModelScope already ship most of them.
missing = [name for name in ("matplotlib", "ipywidgets", "requests") if importlib.util.find_spec(name) is None]
if missing and not GRADING:
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as exc:
        raise SetupProblem(say(f"pip install {{' '.join(missing)}} 失败（{{type(exc).__name__}}）：请联网或换镜像源"
                               "（pip config set global.index-url ...）后重新运行本单元格",
                               f"pip install {{' '.join(missing)}} failed ({{type(exc).__name__}}): connect or set a "
                               "pip mirror (pip config set global.index-url ...), then re-run this cell")) from None
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import matplotlib.pyplot as plt
from tools.prefixbench import BlockKeys, PrefixCache  # the block model, for the demos and the seed policy
from tools.prefixbench.workload import generate_shared_prefix_workload

SETUP_DONE = True
print(say(f"课程仓库：{{REPO_ROOT}}", f"repository: {{REPO_ROOT}}"))
'''

STEP1 = """\
## Step 1: 明确 benchmark 的输入、变量和输出 | Define inputs, variables and outputs

本项目的输入是一组**已经 token 化**的请求样本。先固定共享前缀、后缀分布、生成长度、并发和 backend，
再只改变 cache policy，才能把收益归因到前缀复用。

| 项目 | 本项目中的约定 |
| --- | --- |
| 输入 | shared-prefix 请求集（token id）、生成长度、并发度、模型和 backend |
| 单变量 | cache off / prefix cache；扩展时再比较 block 粒度、淘汰策略或 backend |
| 观察指标 | hit rate、reused tokens、TTFT、TPOT、吞吐、P99、峰值显存和维护开销 |
| 输出 | baseline / candidate 对照表，以及 accept / tune / reject 决策 |

为什么坚持用 token id：同一段文字在不同 tokenizer、不同 chat template 下会变成不同的 token 序列，
**字符串相同不代表前缀相同**。缓存只认 token。"""

STEP2 = """\
## Step 2: 先验证请求分布和 baseline | Fix the request distribution and the baseline

共享前缀必须在 token 化之后仍然一致。先运行 cache off 的 G0，再开启一种 cache policy 运行 G1：

| 固定项 | G0 baseline | G1 candidate |
| --- | --- | --- |
| 请求输入 | 相同 shared-prefix workload | 与 G0 相同（同一个 `workload_id`） |
| 模型与 backend | 固定版本 | 与 G0 相同 |
| batch / concurrency | 固定 | 与 G0 相同 |
| 唯一变量 | cache off | prefix cache policy |
| 命中证据 | 不适用 | backend metrics、日志或专用接口 |

`workload_id` 是 workload 内容的哈希（见 `tools.prefixbench.workload.Workload.workload_id`）：
两次运行只有 `workload_id` 相同才能比较，练习里的函数也会检查这一点。"""

STEP3 = """\
## Step 3: 用统一口径比较收益与代价 | Compare gains and costs on one scale

命中率不是最终目标。每组结果至少要同时记录：

| 指标组 | 字段 | 判断问题 |
| --- | --- | --- |
| 复用 | hit rate、reused tokens、prefill work reduction | 重复计算减少了多少 |
| 性能 | TTFT、TPOT、E2E、throughput、P99 | 请求链路是否真正变快 |
| 资源 | peak memory、cache blocks、eviction | 缓存维护是否带来额外压力 |
| 质量 | status、task quality、OOM | 是否保持同一输出约束 |

“命中率”有三种口径，报告里必须写清楚用的是哪一种（`hit_rate_unit`）：

- **token 口径** `token_reuse_rate` = 命中的 token / prompt token 总数（vLLM 的 `prefix_cache_hits / prefix_cache_queries`）；
- **block 口径** `block_hit_rate` = 命中的完整 block / 查找的完整 block；
- **请求口径** `cache_hit_rate` = 至少命中一个 block 的请求占比。

TODO 0 返回请求口径的 `cache_hit_rate` 和 token 口径的 `token_reuse_rate`；TODO 1–3 不管口径，只要求比较的
运行口径相同（`hit_rate_unit`）。Step 10 的决策用 **token 口径**（`hit_rate = token_reuse_rate`，
`hit_rate_unit="token"`），因为真实 backend 的计数器（vLLM）也是 token 口径。"""

STEP4 = """\
## Step 4: 输出 benchmark 决策 | Decide: accept / tune / reject

TODO 3 的规则（和它的 docstring 一字不差地一致；`gain` = `hit_rate_gain`，`Δttft` = `ttft_delta_ms`，`Δoverhead` = `overhead_delta`）：

| 决策 | 条件 | 下一步（`next_action`） |
| --- | --- | --- |
| accept | `gain ≥ min_hit_rate`，`Δttft < 0`，`Δoverhead ≤ max_overhead` | `promote_to_serving_eval`：扩大请求量和并发回归 |
| tune | `gain ≥ min_hit_rate`，`Δttft < 0`，但 `Δoverhead > max_overhead` | `refine_chunk_or_eviction_policy`：改变单一变量后重跑 |
| reject | 其余情况：`gain < min_hit_rate`（哪怕 TTFT 变快），或 `Δttft ≥ 0` | `fallback_to_no_cache`：关闭缓存或更换 workload |

函数只看这三个数。真实报告里还要看 TTFT 是否稳定、有没有 OOM、输出质量是否不变——这些由你在报告里判断，不在 TODO 3 里。

{chapter_map}

| 模块 | 必须记录 | 用途 |
| --- | --- | --- |
| baseline | 请求重用模式、TTFT、缓存关闭口径 | 保证比较合法 |
| candidate | hit rate、TTFT、维护开销 | 解释缓存收益来源 |
| 对比 | 命中增益、延迟变化、开销变化 | 判断是否值得 adopt |
| 决策 | accept / tune / reject | 输出 benchmark 结论 |""".format(chapter_map=CHAPTER_MAP)

STEP5 = """\
## Step 5: 缓存模型：block、前缀 key 与淘汰 | The cache model: blocks, prefix keys and eviction

CPU 部分只验证 token 前缀匹配、完整 block 复用、缓存容量和淘汰逻辑；它**不**代表真实 KV Cache 显存、
CUDA 延迟或 backend 命中率。真实引擎（vLLM v1、SGLang）的规则可以归纳成四条：

1. **只缓存完整 block**。prompt 按 `block_size` 切块，尾部不足一个 block 的 token 既不命中也不缓存。
2. **block 的 key 是它的整个前缀**：父 block 的 key + 本 block 的 token（vLLM v1 的 block hash 链、SGLang 的
   radix tree 路径、Mooncake trace 的 `hash_ids` 都是这样）。同样的 token 接在不同前缀后面，是不同的 block——
   因为 KV 依赖前面所有 token。只用 `(block_index, 内容)` 做 key 会把“位置和内容相同、前缀不同”的 block 误判为命中。
3. **从 block 0 开始找最长的已缓存前缀，遇到第一个未命中就停**。后面的 block 即使还在缓存里也用不上。
4. **LRU 淘汰，且不会拆散前缀**：请求运行时它的 block 被 pin 住（引用计数 > 0，不能驱逐）；请求结束时
   按**尾部先释放**的顺序放回 LRU 队列（vLLM v1 `free` 时倒序释放），所以同样新的 block 里最深的先被驱逐——
   等价于“驱逐最久未用的叶子”（SGLang 的 radix tree 就这样做）。队列用双向链表 / `OrderedDict`，每次 O(1)。

下面两个单元格用参考库 `tools.prefixbench` 把规则 2 和规则 4 演示出来。"""

DEMO_KEYS = '''\
# 规则 2 演示 | Rule 2: (position, content) keys vs whole-prefix keys
require_setup()
A, B, C, D = [1, 1], [2, 2], [3, 3], [4, 4]
requests = {"r1 = A B": A + B, "r2 = C D": C + D, "r3 = A D": A + D}
prefix_table = BlockKeys()  # interns (parent key, block tokens) -> small int
seen_prefix, seen_position = set(), set()
for label, tokens in requests.items():
    prefix_keys = prefix_table.of(tokens, 2)
    position_keys = [(i, tuple(tokens[2 * i:2 * i + 2])) for i in range(len(tokens) // 2)]
    hit_prefix = hit_position = 0
    while hit_prefix < len(prefix_keys) and prefix_keys[hit_prefix] in seen_prefix:
        hit_prefix += 1
    while hit_position < len(position_keys) and position_keys[hit_position] in seen_position:
        hit_position += 1
    print(f"{label}: prefix keys {prefix_keys} -> hit {hit_prefix} block(s) | "
          f"(position, content) keys {position_keys} -> hit {hit_position} block(s)")
    seen_prefix.update(prefix_keys)
    seen_position.update(position_keys)
print(say("r3 的第 2 个 block D 接在 A 后面，r2 的 D 接在 C 后面：KV 不同，只有前缀 key 能区分。",
          "r3's second block D follows A, r2's D follows C: their KV differs, and only prefix keys tell them apart."))
'''

DEMO_STEPS = '''\
# 规则 4 演示 | Rule 4: step by step, tail-first LRU ("lru") vs the chapter's original head-first LRU ("seed")
require_setup()
LETTERS = {1: "A", 2: "B", 3: "C", 4: "D", 5: "E", 6: "F"}


def show_steps(requests, block_size, capacity_blocks, policy):
    """Replay requests through the library's PrefixCache and draw the cache after each one."""
    cache, table, names, parents = PrefixCache(capacity_blocks, policy), BlockKeys(), {}, {}
    print(f"policy={policy!r}, capacity={capacity_blocks} blocks")
    for tokens in requests:
        keys = table.of(tokens, block_size)
        for depth, key in enumerate(keys):
            names[key] = "".join(LETTERS[tokens[i * block_size]] for i in range(depth + 1))
            parents[key] = keys[depth - 1] if depth else None
        hits = cache.process(keys)
        cached = [key for key in names if key in cache]
        # an orphan is cached but unreachable: some block on its prefix path is gone
        orphan = {key for key in cached if any(p not in cache for p in _ancestors(key, parents))}
        shown = " ".join(f"[{names[k]}{'⚠' if k in orphan else ''}]" for k in cached)
        label = " ".join(names[k][-1] for k in keys)
        print(f"  {label:<9} hit {hits} block(s) | cache: {shown:<34} orphans: {len(orphan)}")
    print(f"  evictions: {cache.evictions}\\n")


def _ancestors(key, parents):
    while parents[key] is not None:
        key = parents[key]
        yield key


A, B, C, D, E, F = [1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6]
steps = [A + B + C + D, E + F, A + B + C + D]
for policy in ("lru", "seed"):
    show_steps(steps, block_size=2, capacity_blocks=4, policy=policy)
print(say("⚠ = orphan block：还占着缓存，但它的前缀已被驱逐，任何查找都走不到它。",
          "⚠ = orphan block: it still takes up the cache, but its prefix was evicted, so no lookup can reach it."))
'''

EXERCISES = """\
## 练习 | Exercises: 4 个 TODO（TODO 0–3）

先用 CPU 验证缓存生命周期，再把结果转成可比较的 benchmark 报告。每个函数的 docstring 就是评分依据：

- **TODO 0 `simulate_prefix_cache`**：按 Step 5 的四条规则模拟缓存（只缓存完整 block、前缀 key、第一个未命中就停、
  pin + 尾部先释放的 LRU，O(1) 驱逐）。空请求跳过；分母为 0 的比率返回 `None`（没有数据不是 0%）。
- **TODO 1 `summarize_prefix_cache`**：汇总同一 workload 的多次运行；缺失指标要报错，不能当成 0。
- **TODO 2 `compare_prefix_cache_to_baseline`**：candidate − baseline；注意增益和差值的方向。
- **TODO 3 `recommend_prefix_cache_run`**：先校验门槛，再给出 accept / tune / reject。

> 章节原稿的参考代码用 `(block_index, 内容)` 做 key、按前缀顺序刷新时间戳（头部先被驱逐）、每次驱逐都
> `min()` 扫描整个缓存。这三点都和真实引擎不同，本练习按真实引擎的语义评分；原因见 Step 7。

TODO 的编号就是评分单元格的编号：TODO n 的函数在 `exN-…` 单元格，它的可见测试是 `test-exN-visible`，
隐藏测试是 `hidden-exN-…`。每个练习后面是可见测试（visible test）；评分时还会运行 notebook 末尾的隐藏测试（hidden tests），
它们检查 docstring 里写明的每一条约定。可见测试失败时，会先打印这个练习的诊断（最可能是哪种典型错误、该看哪里），
再报错。运行顺序：先运行本节上面的单元格，再依次完成四个 TODO。"""

DIAGNOSE_MD = """\
### 诊断：最可能错在哪里 | Diagnosis: which mistake is it?

测试只告诉你*有没有*错；下面这个单元格用一组小探针（只用可见的例子）说出**最可能是哪一种典型错误、该看哪里**。
可以只查一个练习：`self_check(globals(), exercises=["simulate_prefix_cache"])`。评分时还会用隐藏探针做同样的诊断，
结果写在反馈的最后（不显示隐藏输入）。

Tests say *whether* an answer is wrong; this cell runs small visible probes and names the most likely known mistake
and what to look at. Grading runs the same diagnosis with hidden probes too and puts it at the end of your feedback."""

DIAGNOSE = '''\
# 诊断 | Diagnosis: name the most likely mistake of each exercise (visible probes only)
require_setup()
if GRADING:
    print(say("评分时跳过：诊断写在反馈里。", "Skipped while grading: the diagnosis is in the feedback."))
else:
    from tools.course.diagnosis import self_check

    findings = self_check(globals())
'''

STOP = """\
---

## 🛑 STOP HERE 🛑

请先尝试自己完成代码并跑通测试。下面的实验**用你自己的函数**：先在 Step 6 用参考库核对你的实现，
再用你的 `simulate_prefix_cache` 测量容量、block 大小和淘汰策略的影响，回放真实 trace，最后用你的 TODO 1–3 做出决策。

> **参考库的规则**：`tools.prefixbench` 是参考实现，可以阅读；它只在自查（诊断、Step 6 的对照）里被调用。
> 提交时调用或抄写参考库（例如 `from tools.prefixbench import ...` 写进练习）会被标记。

---"""

SELF_CHECK_MD = """\
## Step 6: 测量：先核对实现，再看容量与 block 大小 | Measure: check your code, then capacity and block size

先用参考库核对你的 `simulate_prefix_cache`：在几百个随机小 workload 上逐字段比较；找到不一致时，把这个例子
**缩小**到最简单的形式（请求最少、prompt 最短、block 和容量最小，且仍然不一致）再打印出来，方便手算。"""

SELF_CHECK = '''\
# 对照参考库 | Check against the library: random workloads, the smallest disagreeing case
require_setup()
from tools.course.diagnosis import check_against_library  # the one place the library's simulator is called

mismatch = check_against_library(globals())
'''

MEASURE_MD = """\
**实验 workload**：120 个请求，每个 704 token，前 600 token 是 3 篇长文档之一（轮流出现，像 RAG 或长 system
prompt），后面是各不相同的问题。用 `generate_shared_prefix_workload` 生成，同一个 seed 每次都一样。

- 左图：容量（block 数）从小到大。容量装不下“3 篇文档 + 正在跑的请求”时，LRU 每次都把下一次要用的文档挤掉，
  命中率是 0——这就是 LRU 的**悬崖**；越过工作集之后才迅速升到上限。
- 右图：block 大小。600 不是 32、64、128 的整数倍，文档最后不满一个 block 的部分永远不能复用，
  所以容量不限时 block 越大命中越低。但在固定的 token 预算（同样的 KV 显存）下结论可能反过来：
  大 block 每篇文档只缓存 512 token，三篇刚好装得下；小 block 想把整篇文档都缓存，反而装不下、互相挤掉。
  **block 大小和容量要一起调**，不能只看其中一个。"""

MEASURE = '''\
# 测量 | Measure: hit rate against cache capacity and block size, with your simulate_prefix_cache (TODO 0)
require_done("simulate_prefix_cache")
docs = generate_shared_prefix_workload(num_requests=120, input_len=704, prefix_len=600, num_prefixes=3, seed=0)
BLOCK = 16


def simulate(prompts, block_size, capacity_blocks=None):
    """Your simulate_prefix_cache; capacity_blocks=None means "room for every block of the workload"."""
    if capacity_blocks is None:
        capacity_blocks = max(1, sum(len(p) // block_size for p in prompts))  # nothing is ever evicted
    return simulate_prefix_cache(prompts, block_size=block_size, capacity_blocks=capacity_blocks)


capacities = [20, 40, 80, 100, 120, 140, 160, 200, 300] if not QUICK else [40, 120, 160, 300]
reuse = [simulate(docs.prompts, BLOCK, cap)["token_reuse_rate"] for cap in capacities]
unlimited = simulate(docs.prompts, BLOCK)["token_reuse_rate"]

block_sizes = [8, 16, 32, 64, 128, 256] if not QUICK else [16, 64, 256]
TOKEN_BUDGET = 1792  # the same KV memory for every block size
by_size_unlimited = [simulate(docs.prompts, bs)["token_reuse_rate"] for bs in block_sizes]
by_size_budget = [simulate(docs.prompts, bs, TOKEN_BUDGET // bs)["token_reuse_rate"] for bs in block_sizes]

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
left.plot(capacities, reuse, marker="o", label=f"block_size={BLOCK}")
left.axhline(unlimited, color="gray", linestyle="--", label=f"unlimited capacity ({unlimited:.3f})")
left.set(xlabel="cache capacity (blocks)", ylabel="token reuse rate", title="Hit rate vs capacity", ylim=(-0.03, 1))
left.legend(loc="lower right")
right.plot(block_sizes, by_size_unlimited, marker="o", label="unlimited capacity")
right.plot(block_sizes, by_size_budget, marker="s", label=f"{TOKEN_BUDGET}-token budget")
right.set(xscale="log", xlabel="block size (tokens)", ylabel="token reuse rate", title="Hit rate vs block size", ylim=(-0.03, 1))
right.set_xticks(block_sizes, [str(b) for b in block_sizes])
right.legend(loc="lower left")
fig.tight_layout()
plt.show()
for bs, value, budget_value in zip(block_sizes, by_size_unlimited, by_size_budget):
    print(f"block_size={bs:>3}: cacheable shared prefix {600 // bs * bs:>3}/600 tokens | reuse unlimited={value:.3f}, "
          f"{TOKEN_BUDGET // bs} blocks={budget_value:.3f}")
'''

COMPARE_MD = """\
## Step 7: 对比：两种淘汰策略 | Compare: two eviction policies

章节原稿的参考代码有三个和真实引擎不同的地方，每一个都会让结论失真：

1. **key = `(block_index, 内容)`**：不同前缀后面同位置、同内容的 block 被当成命中（Step 5 的 r3 = A D），命中率偏高。
2. **按前缀顺序刷新时间戳**：请求的头部比尾部“更旧”，淘汰时先丢头部。尾部还占着缓存，却因为头部没了而永远
   查不到——这就是 **orphan block**。真实引擎 pin 住运行中的 block，并按尾部先释放的顺序放回 LRU 队列。
3. **每次驱逐 `min(cache, key=cache.get)`**：O(capacity)，容量一大就慢；真实引擎用双向链表，O(1)。

下面并排对比两种策略：`lru` 是你的 `simulate_prefix_cache`（真实引擎的语义），`seed` 是原稿的头部先驱逐
（在参考库的 block 模型 `PrefixCache(policy="seed")` 上运行，key 已经改成前缀 key，只剩淘汰顺序这一个变量）。"""

COMPARE_POLICIES = '''\
# 对比 | Compare: your tail-first LRU ("lru", TODO 0) vs the chapter's original head-first LRU ("seed")
require_done("simulate_prefix_cache")


def seed_policy(prompts, block_size, capacity_blocks):
    """The chapter's original head-first LRU (keys already fixed to whole-prefix keys), on the block model."""
    cache, keys, per_request = PrefixCache(capacity_blocks, "seed"), BlockKeys(), []
    for tokens in (p for p in prompts if p):
        per_request.append(cache.process(keys.of(tokens, block_size)) * block_size)
    total = sum(len(p) for p in prompts)
    return {"token_reuse_rate": sum(per_request) / total if total else None,
            "cache_hit_rate": sum(h > 0 for h in per_request) / len(per_request) if per_request else None,
            "cache_size_blocks": len(cache),
            "orphan_blocks": cache.orphan_blocks(), "eviction_count": cache.evictions,
            "per_request_hit_tokens": per_request}


def lru_policy(prompts, block_size, capacity_blocks):
    """Your simulate_prefix_cache. Tail-first release never strands a block, so it has no orphans."""
    return dict(simulate(prompts, block_size, capacity_blocks), orphan_blocks=0)


POLICY = {"lru": lru_policy, "seed": seed_policy}
policy_capacities = [40, 60, 80, 100, 120, 140, 160, 200] if not QUICK else [60, 100, 140, 200]
runs = {policy: [POLICY[policy](docs.prompts, BLOCK, cap) for cap in policy_capacities] for policy in POLICY}

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
for policy, marker in (("lru", "o"), ("seed", "s")):
    left.plot(policy_capacities, [r["token_reuse_rate"] for r in runs[policy]], marker=marker, label=policy)
left.set(xlabel="cache capacity (blocks)", ylabel="token reuse rate", title="Same workload, two policies", ylim=(-0.03, 1))
left.legend()
width = 6
for offset, policy in ((-width / 2, "lru"), (width / 2, "seed")):
    reachable = [r["cache_size_blocks"] - r["orphan_blocks"] for r in runs[policy]]
    orphans = [r["orphan_blocks"] for r in runs[policy]]
    xs = [c + offset for c in policy_capacities]
    right.bar(xs, reachable, width, label=f"{policy}: reachable")
    if any(orphans):  # lru never strands a block: no empty legend entry for it
        right.bar(xs, orphans, width, bottom=reachable, label=f"{policy}: orphan", hatch="//")
right.set_xticks(policy_capacities, [str(c) for c in policy_capacities])  # one tick under each pair of bars
right.set(xlabel="cache capacity (blocks)", ylabel="blocks in cache at the end", title="What the cache holds")
right.legend(fontsize=8)
fig.tight_layout()
plt.show()
for cap, a, b in zip(policy_capacities, runs["lru"], runs["seed"]):
    print(f"capacity={cap:>3}: lru reuse={a['token_reuse_rate']:.3f} orphans={a['orphan_blocks']:>2} | "
          f"seed reuse={b['token_reuse_rate']:.3f} orphans={b['orphan_blocks']:>2}")
'''

COST_MD = """\
同样的容量，头部先驱逐会在某个区间里把命中率直接打到 0：3 篇文档轮流出现时，每篇文档的头部总是最先被挤掉，
尾部变成 orphan 占着位置。尾部先释放则把有限的容量留给最有用的前缀头部。

再看第 3 点，驱逐的代价：原稿的 `min()` 扫描随容量线性增长，`OrderedDict` 的 `popitem(last=False)` 与容量无关。"""

COST = '''\
# 代价 | Cost: O(capacity) eviction (the chapter's original scan) vs O(1) eviction (OrderedDict)
import time


def scan_eviction_simulate(token_sequences, block_size, capacity_blocks):
    """The original reference's eviction loop, kept only to time it: every eviction scans the cache."""
    cache, clock, evictions = {}, 0, 0
    for tokens in token_sequences:
        for start in range(0, len(tokens) - block_size + 1, block_size):
            clock += 1
            cache[(start // block_size, tuple(tokens[start:start + block_size]))] = clock
            while len(cache) > capacity_blocks:
                del cache[min(cache, key=cache.get)]
                evictions += 1
    return evictions


require_done("simulate_prefix_cache")
if GRADING:  # a wall-clock measurement on a busy grading machine says nothing, and would differ run to run
    print(say("评分时跳过计时。", "Timing skipped while grading."))
else:
    churn = generate_shared_prefix_workload(num_requests=300, input_len=128, prefix_len=0, seed=1).prompts
    sizes = [250, 500, 1000, 2000]
    scan_s, ordered_s = [], []
    for cap in sizes:
        start = time.perf_counter()
        scan_eviction_simulate(churn, 4, cap)
        scan_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        simulate_prefix_cache(churn, block_size=4, capacity_blocks=cap)
        ordered_s.append(time.perf_counter() - start)

    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(sizes, scan_s, marker="o", label="min() scan per eviction")
    ax.plot(sizes, ordered_s, marker="s", label="your simulate_prefix_cache (OrderedDict)")
    inserted = sum(len(p) // 4 for p in churn)
    ax.set(xlabel="cache capacity (blocks)", ylabel="seconds", title=f"Eviction cost, {inserted} blocks inserted")
    ax.legend()
    fig.tight_layout()
    plt.show()
'''

TRACE_MD = f"""\
## Step 8: 真实 trace：回放 Mooncake | Real trace: replaying Mooncake

合成 workload 由我们自己设定复用率；真实的复用模式要看真实请求。Mooncake（Kimi 的推理服务，FAST'25 论文
*Mooncake: Trading More Storage for Less Computation*）公开了脱敏 trace：每行一个请求，`input_length` 是 token 数，
`hash_ids` 是每个 512-token block 的前缀链式哈希——正是 Step 5 的规则 2。

- 第一次使用时库会下载 trace（约 3 MB 和 1 MB，校验 sha256）并缓存到 `~/.cache/prefixbench/traces`；
  已有文件时设置 `PREFIXBENCH_TRACE_DIR` 指向它所在的目录。离线又没有文件时，下面的单元格只打印获取方法，不会报错。
- 论文 Table 2 给出两个 trace 的 cache ratio（无限容量下最多能命中的比例）：conversation 约 40%，synthetic 约 66%。
  我们用同一份数据、无限容量回放，自己算一遍再对照。"""

TRACE = '''\
# 回放 | Replay the Mooncake traces with unlimited capacity and compare with the paper
require_setup()
from tools.prefixbench.traces import TRACES, TraceUnavailable, load_trace, replay_trace

traces = {}
if GRADING:  # this section is not graded: the grader skips it (it would cost every submission a second)
    print(say("评分时跳过 trace 回放（本节不计分）", "trace replay skipped while grading (not graded)"))
for name in ("conversation", "synthetic") if not GRADING else ():
    try:
        traces[name] = load_trace(name, allow_download=True)
    except TraceUnavailable as exc:
        print(say(f"trace {name!r} 不可用：{exc}", f"trace {name!r} unavailable: {exc}"))
        print(say(f"  获取方法：联网后重新运行本单元格（自动下载并校验），或下载 {TRACES[name].filename} "
                  "放进一个目录并设置 PREFIXBENCH_TRACE_DIR。",
                  f"  To get it: re-run this cell online (it downloads and checks the file), or download "
                  f"{TRACES[name].filename} into a folder and set PREFIXBENCH_TRACE_DIR to it."))

if traces:
    print(f"{'trace':<13}{'requests':>9}{'token hit':>11}{'block hit':>11}{'paper':>8}")
for name, requests in traces.items():
    result = replay_trace(requests, capacity_blocks=None)
    print(f"{name:<13}{result['requests']:>9}{result['token_hit_rate']:>11.4f}{result['block_hit_rate']:>11.4f}"
          f"{TRACES[name].paper_cache_ratio:>8.2f}")
'''

TRACE_EXPLAIN = """\
我们的 token 口径比论文低几个百分点（conversation 约 0.37 对 0.40，synthetic 约 0.65 对 0.66），原因在口径：

- 这里**只有完整的 512-token block 能命中**：每个请求最后不满 512 的那一段永远算 miss，而它占了 prompt 的一部分；
- token 口径的分母是全部 prompt token；按 block 口径（命中 block / 完整 block）数字更接近论文，synthetic 几乎一致；
- 论文表格是四舍五入的概括值，具体计数方式（是否把尾部 block 当整块、是否按 block 计）没有完全写明。

结论：**先确认口径，再比较数字**；差几个百分点时先查定义，而不是先怀疑实现。下面看容量的影响
（论文 Fig. 9 也是这张图：容量越大命中越高，但收益递减）。"""

TRACE_CAPACITY = '''\
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
'''

TRACE_OUTRO = """\
在真实对话 trace 上，两种策略的命中率很接近（对话请求多数较短、复用主要来自多轮对话的历史），差别主要体现为
seed 策略留下的 orphan block：它们占着容量却不会再被命中。**策略优劣取决于 workload**——这正是要用真实 trace
测量、而不是凭直觉下结论的原因。"""

EXPLORER_MD = """\
## Step 9: 交互探索 | Explore interactively

拖动滑块改变容量、block 大小和淘汰策略，观察文档 workload 上的命中情况。
在不支持 ipywidgets 的环境里（Colab 对 ipywidgets 8 的支持时好时坏），直接修改并运行
`explore(capacity_blocks=..., block_size=..., policy=...)` 即可，效果相同。"""

EXPLORER = '''\
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
'''

EXPLORER_TRY = '''\
# 在这里试试 | Try it here (this cell is yours to edit), e.g.:
# explore(capacity_blocks=80, block_size=16, policy="seed")
'''

DECIDE_MD = """\
## Step 10: 从测量到决策 | From measurement to decision

CPU 模拟给出的是**命中率**（可以算准）；TTFT 需要真实 backend 才能测量。为了把流程走通，下面用一个
**明确标注为假设**的线性模型估计 TTFT：`TTFT ≈ 15 ms + 0.05 ms × 每个请求未命中的 token 数`，
overhead 取假设值。三个场景分别落在 accept、tune、reject；命中率来自你的 TODO 0，汇总、对比和决策来自你的 TODO 1–3。
注意第三个场景：模型估计的 TTFT 变快了，但命中率增益没有达到门槛——**仍然 reject**。"""

DECIDE = '''\
# 决策 | Decide: measured hit rate + modelled TTFT (an assumption, not a measurement) -> accept / tune / reject
require_done("simulate_prefix_cache", "summarize_prefix_cache", "compare_prefix_cache_to_baseline",
             "recommend_prefix_cache_run")
MIN_HIT_RATE, MAX_OVERHEAD = 0.5, 0.05  # thresholds for this workload, not universal constants
WORKLOAD_ID = docs.workload_id


def modelled_run(name, capacity_blocks, overhead):
    result = simulate(docs.prompts, BLOCK, capacity_blocks)  # your TODO 0
    ttft_ms = 15.0 + 0.05 * result["miss_tokens"] / result["total_requests"]  # assumed model
    return {"name": name, "hit_rate": result["token_reuse_rate"], "ttft_ms": round(ttft_ms, 2),
            "overhead": overhead, "workload_id": WORKLOAD_ID, "hit_rate_unit": "token"}


baseline = {"name": "G0 cache off", "hit_rate": 0.0, "ttft_ms": round(15.0 + 0.05 * 704, 2), "overhead": 0.0,
            "workload_id": WORKLOAD_ID, "hit_rate_unit": "token"}
scenarios = [modelled_run("G1 capacity=160", 160, overhead=0.03),
             modelled_run("G1 capacity=160, costly", 160, overhead=0.12),
             modelled_run("G1 capacity=100", 100, overhead=0.01)]
print(summarize_prefix_cache([baseline, *scenarios]))  # your TODO 1
for candidate in scenarios:
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)  # your TODO 2
    verdict = recommend_prefix_cache_run(baseline, candidate, MIN_HIT_RATE, MAX_OVERHEAD)  # your TODO 3
    print(f"{candidate['name']:<26} gain={comparison['hit_rate_gain']:.3f} ttft_delta={comparison['ttft_delta_ms']:+.1f} ms "
          f"overhead_delta={comparison['overhead_delta']:+.2f} -> {verdict['decision']:<6} ({verdict['next_action']})")
'''

GPU_MD_HEAD = """\
## Step 11（可选）: GPU/backend 实验 | Optional: real backend G0 / G1

**统一结果表**：先填写共同条件，再填写每个实验组的结果；同一行内的模型、backend、workload 和生成长度必须可追溯。"""

GPU_TABLE = """\
| 实验组 | model / backend / dtype | prompt / generated tokens | batch / concurrency | cache policy | hit rate / evidence | reused tokens | TTFT (ms) | TPOT (ms/token) | E2E (ms) | P99 (ms) | throughput (token/s) | peak memory (MiB) | quality / status | decision |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| G0 | 待填写 | 待填写 | 1 / 1 | off | 不适用 | 0 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待填写 | 待判断 |
| G1 | 待填写 | 待填写 | 1 / 1 | prefix cache | 待采集 / metrics 或日志 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待填写 | 待判断 |
| G2 | 待填写 | 待填写 | 待填写 | 待填写 | 待采集 / 证据来源 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待采集 | 待填写 | 待判断 |
| 共同条件 | 模型 revision、服务版本、GPU、PyTorch/CUDA、workload 文件、warmup/重复次数 | 与 G0/G1 一致 | 变量只在说明中列出 | 记录实际开关 | 命中率不能由 TTFT 推断 | 记录 token 口径 | 单位统一 | 单位统一 | 单位统一 | P99 口径统一 | 输出 token/s | `torch.cuda.max_memory_allocated` 或 backend 指标 | 记录 OOM 与质量 | accept / tune / reject |"""

GPU_MD_TAIL = """\
下面的配置代码把 `RUN_REAL_BACKEND` 改成 `True` 后，会分别启动 G0 / G1（vLLM，prefix caching 关 / 开），保存
`69_prefix_cache_g0_cache_off.json`、`69_prefix_cache_g1_prefix_cache.json` 和总清单 `69_prefix_cache.json`。
backend 没有暴露命中指标时，报告必须保留 `hit_rate_evidence=backend_metrics_or_logs_required`，不能用 TTFT 变化代替命中率。

- **证据边界**：CPU 模拟验证前缀匹配、block 复用和淘汰；真实命中率必须来自 backend metrics、日志或专用接口。
- 按 66 的统一分组执行：G0 关闭 prefix cache，G1 在相同 shared-prefix workload 下开启一种 cache policy，
  G2 才比较不同 backend 或缓存策略。先用 vLLM 完成 G0 / G1，SGLang 作为 G2 扩展。
- 普通服务启动成功不代表 prefix cache 已启用：结果里必须保留 cache_policy、命中率证据和失效开销。
- 评分（nbgrader）时本节整段跳过；默认 `RUN_REAL_BACKEND = False` 也不会下载模型、不占用 GPU。
  开关在下面第一个单元格里（可以编辑），第二个单元格是实验本身。"""

GPU_SWITCH = '''\
# GPU 开关 | The switch (this cell is yours to edit)
RUN_REAL_BACKEND = False  # 改为 True 才启动 G0/G1；默认不下载模型、不占用 GPU。评分时整节跳过。
'''

GPU = '''\
# 可选 GPU 实验 | Optional GPU section: G0 (prefix caching off) vs G1 (on) through the shared runtime helper
import json
import os
from pathlib import Path

RUN_REAL_BACKEND = globals().get("RUN_REAL_BACKEND", False)  # the switch lives in the cell above

if os.environ.get("NBGRADER_EXECUTION"):
    print("nbgrader 评分中：跳过可选 GPU 部分。 | nbgrader is grading: the optional GPU section is skipped.")
else:
    require_setup()
    try:
        from tools.inference_project_runtime import locate_repo_root
        REPO_ROOT = locate_repo_root()
        from tools.inference_project_runtime import (
            shared_project_config, runtime_snapshot, start_optional_vllm,
            stop_optional_vllm, run_backend_benchmark, compare_groups,
        )
    except ImportError:  # ModuleNotFoundError included: no runtime helper here, so no real backend
        RUN_REAL_BACKEND = False
        def shared_project_config(**kwargs): return kwargs
        def save_project_result(*args, **kwargs): raise RuntimeError(say('需要从仓库根目录运行真实 backend 入口',
                                                                       'run the real backend from the repository root'))

    MODEL_ID = 'Qwen/Qwen2.5-0.5B-Instruct'  # G0/G1 使用同一基座模型。
    WORKLOAD = 'benchmarks/workloads/prefix_reuse.jsonl'  # 共享前缀、变化后缀的请求分布（token id）。
    RESULT_PATH = 'benchmarks/results/69_prefix_cache.json'  # 保存对照清单，不覆盖分组结果。
    NUM_PROMPTS = 5  # smoke 规模；正式结论应提高请求数并重复运行。
    CONCURRENCY = 1  # G0/G1 必须保持一致；并发扫描另存为独立实验。
    WARMUP = 1
    GROUPS = (
        {'name': 'g0_cache_off', 'cache_policy': 'off', 'enabled': False},
        {'name': 'g1_prefix_cache', 'cache_policy': 'prefix_cache', 'enabled': True},
    )
    project_config = shared_project_config(
        model=MODEL_ID, backend='vllm', dtype='auto', generated_tokens=64,
        workload=WORKLOAD, num_prompts=NUM_PROMPTS, concurrency=CONCURRENCY,
        warmup=WARMUP, groups=[item['name'] for item in GROUPS],
    )
    print(project_config)
    if RUN_REAL_BACKEND:
        reports, manifests = [], {}
        for group in GROUPS:
            result_path = f"benchmarks/results/69_prefix_cache_{group['name']}.json"
            server, log_path, port, selected_dtype, model_path = start_optional_vllm(
                model_id=MODEL_ID, model_source='auto', dtype='auto',
                served_model_name=MODEL_ID, enable_prefix_caching=group['enabled'],
            )
            try:
                report = run_backend_benchmark(
                    project='69', base_url=f'http://127.0.0.1:{port}', model=MODEL_ID,
                    label=f"vllm-{group['name']}", output=result_path, workload=WORKLOAD,
                    backend='vllm', batch=1, max_tokens=64,
                    num_prompts=NUM_PROMPTS, concurrency=CONCURRENCY, warmup=WARMUP,
                    dtype=selected_dtype, cache_policy=group['cache_policy'],
                )
                manifests[group['name']] = report
                normalized = report.get('normalized_result') or {}
                reports.append({
                    'group': group,
                    'report_path': result_path,
                    'status': report.get('status', 'ok'),
                    'quality': report.get('quality', {'status': 'not_evaluated'}),
                    'evidence_level': 'real_backend_smoke',
                    'normalized_result': normalized,
                })
                print(reports[-1])
            finally:
                stop_optional_vllm(server, log_path)

        # 命中率来自 G1 服务器自己的 Prometheus 计数器（hit_rate_evidence='backend_metrics'）；拿不到时为 None 并写明原因，
        # 决策随之是 tune——绝不从 TTFT 的变化反推命中率。
        # The hit rate comes from G1's own Prometheus counters; without them it stays None with a reason.
        paired_summary = compare_groups(manifests.get('g0_cache_off'), manifests.get('g1_prefix_cache'))
        for key in ('hit_rate', 'hit_rate_evidence', 'reused_tokens', 'predicted_hit_rate', 'g0_ttft_p50_ms',
                    'g1_ttft_p50_ms', 'ttft_speedup', 'ttft_speedup_bound', 'decision', 'reason'):
            print(f'{key}: {paired_summary.get(key)}')
        # 章节的收获：你的模拟器（TODO 0）预测的命中 token 与服务器实测对照 | the payoff: your simulator vs the server
        try:
            from tools.prefixbench.workload import load_workload
            served = load_workload(WORKLOAD).prompts[:NUM_PROMPTS]
            server_block = int(paired_summary.get('block_size') or 16)  # vLLM's default block size
            predicted = simulate_prefix_cache(served, block_size=server_block,
                                              capacity_blocks=max(1, sum(len(p) // server_block for p in served)))
            print(say(f"你的模拟器预测命中 {predicted['reused_tokens']} 个 token；服务器实测 "
                      f"{paired_summary.get('reused_tokens')} 个。",
                      f"Your simulator predicted {predicted['reused_tokens']} hit tokens; the server measured "
                      f"{paired_summary.get('reused_tokens')}."))
        except Exception as exc:  # noqa: BLE001 - the comparison is a bonus, never the end of the run
            print(say(f"无法用你的模拟器预测（{type(exc).__name__}: {exc}）",
                      f"could not predict with your simulator ({type(exc).__name__}: {exc})"))
        manifest_path = Path(RESULT_PATH)
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
        manifest_path.write_text(json.dumps({
            'project': '69', 'config': project_config,
            'environment': runtime_snapshot(),
            'groups': reports,
            'paired_summary': paired_summary,
            'hit_rate_evidence': paired_summary.get('hit_rate_evidence') or 'backend_metrics_or_logs_required',
        }, ensure_ascii=False, indent=2), encoding='utf-8')
        print(say(f'对照清单已保存：{manifest_path}', f'manifest saved: {manifest_path}'))
'''

HIDDEN_MD = """\
## 评分用隐藏测试 | Hidden grading tests

下面的单元格在学生版里只有注释：评分（nbgrader autograde）时，这里会换回完整的隐藏测试并计分。
它们检查 TODO docstring 里写明的每一条约定，包括尾部不完整的 block、前缀 key、第一个未命中即停、
尾部先释放的 LRU、O(1) 驱逐（大 workload 上限时 5 秒）、缺失指标、增减方向和门槛校验。
隐藏测试放在最后，所以它们不会影响上面任何单元格的输出；反馈里只显示每个单元格的得分和失败提示。"""

def _texts(lang: str) -> dict[str, str]:
    """Every prose text of the edition by name: lesson.py holds the Chinese ones, lesson_en.py the English."""
    zh = {name: globals()[name] for name in PROSE}
    zh["INTRO"] = f"{TITLE}\n\n" + INTRO_BODY.format(links=_links_markdown("zh"))
    zh["GPU_MD"] = f"{GPU_MD_HEAD}\n\n{GPU_TABLE}\n\n{GPU_MD_TAIL}"
    if lang == "zh":
        return zh
    en = {name: EN[name] for name in PROSE}
    en["INTRO"] = f"{TITLE_EN}\n\n" + EN["INTRO_BODY"].format(links=_links_markdown("en"))
    en["GPU_MD"] = f"{EN['GPU_MD_HEAD']}\n\n{EN['GPU_TABLE']}\n\n{EN['GPU_MD_TAIL']}"
    return en


PROSE = ("STEP1", "STEP2", "STEP3", "STEP4", "STEP5", "EXERCISES", "DIAGNOSE_MD", "STOP", "SELF_CHECK_MD", "MEASURE_MD",
         "COMPARE_MD", "COST_MD", "TRACE_MD", "TRACE_EXPLAIN", "TRACE_OUTRO", "EXPLORER_MD", "DECIDE_MD", "HIDDEN_MD")
"""The markdown texts each edition has in its own language (INTRO and GPU_MD are put together in _texts)."""


class _Prose(str):
    """In LAYOUT: the name of a text each edition has in its own language (see _texts)."""


class _Exercise(str):
    """In LAYOUT: the name of an exercise cell, whose head (docstring, TODO comment) differs by edition."""


LAYOUT = (
    (md, "intro", _Prose("INTRO")),
    (code, "setup", SETUP),
    (md, "step1", _Prose("STEP1")),
    (md, "step2", _Prose("STEP2")),
    (md, "step3", _Prose("STEP3")),
    (md, "step4", _Prose("STEP4")),
    (md, "step5", _Prose("STEP5")),
    (code, "demo-keys", DEMO_KEYS),
    (code, "demo-steps", DEMO_STEPS),
    (md, "exercises", _Prose("EXERCISES")),
    (code, "exercise-imports", ex.IMPORTS),
    (solution, "ex0-simulate", _Exercise("SIMULATE")),
    (test, "test-ex0-visible", ex.TEST_SIMULATE_VISIBLE, 3),
    (solution, "ex1-summarize", _Exercise("SUMMARIZE")),
    (test, "test-ex1-visible", ex.TEST_SUMMARIZE_VISIBLE, 1),
    (solution, "ex2-compare", _Exercise("COMPARE")),
    (test, "test-ex2-visible", ex.TEST_COMPARE_VISIBLE, 1),
    (solution, "ex3-recommend", _Exercise("RECOMMEND")),
    (test, "test-ex3-visible", ex.TEST_RECOMMEND_VISIBLE, 1),
    (test, "test-seed-template", ex.TEST_SEED_TEMPLATE, 2),
    (md, "diagnose-intro", _Prose("DIAGNOSE_MD")),
    (code, "diagnose", DIAGNOSE),
    (md, "stop-here", _Prose("STOP")),
    (md, "step6", _Prose("SELF_CHECK_MD")),
    (code, "self-check", SELF_CHECK),
    (md, "measure-intro", _Prose("MEASURE_MD")),
    (code, "measure", MEASURE),
    (md, "step7", _Prose("COMPARE_MD")),
    (code, "compare-policies", COMPARE_POLICIES),
    (md, "cost-intro", _Prose("COST_MD")),
    (code, "eviction-cost", COST),
    (md, "step8", _Prose("TRACE_MD")),
    (code, "trace-replay", TRACE),
    (md, "trace-explain", _Prose("TRACE_EXPLAIN")),
    (code, "trace-capacity", TRACE_CAPACITY),
    (md, "trace-outro", _Prose("TRACE_OUTRO")),
    (md, "step9", _Prose("EXPLORER_MD")),
    (code, "explorer", EXPLORER),
    (plain, "explorer-try", EXPLORER_TRY),
    (md, "step10", _Prose("DECIDE_MD")),
    (code, "decide", DECIDE),
    (md, "step11", _Prose("GPU_MD")),
    (plain, "gpu-switch", GPU_SWITCH),
    (code, "gpu-backend", GPU),
    (md, "hidden-intro", _Prose("HIDDEN_MD")),
    (test, "hidden-ex0-blocks", ex.HIDDEN_SIMULATE_BLOCKS, 2),
    (test, "hidden-ex0-keys", ex.HIDDEN_SIMULATE_KEYS, 2),
    (test, "hidden-ex0-eviction", ex.HIDDEN_SIMULATE_EVICTION, 3),
    (test, "hidden-ex0-oracle", ex.HIDDEN_SIMULATE_ORACLE, 2),
    (test, "hidden-ex0-speed", ex.HIDDEN_SIMULATE_SPEED, 2),
    (test, "hidden-ex1-summarize", ex.HIDDEN_SUMMARIZE, 2),
    (test, "hidden-ex2-compare", ex.HIDDEN_COMPARE, 2),
    (test, "hidden-ex3-decision", ex.HIDDEN_RECOMMEND_DECISION, 2),
    (test, "hidden-ex3-thresholds", ex.HIDDEN_RECOMMEND_THRESHOLDS, 1),
)
"""The notebook, cell by cell: (maker, id, source or text name[, points]). Both editions have exactly these."""


def cells(lang: str = config.DEFAULT_LANGUAGE) -> list[Cell]:
    """The notebook's cells in one edition (``"zh"``, the default, or ``"en"``): the same ids, roles, points
    and code in both; the prose and the exercise docstrings in the edition's language."""
    if lang not in config.LANGUAGES:
        raise ValueError(f"lang must be one of {config.LANGUAGES}, got {lang!r}")
    texts = _texts(lang)

    def resolve(value: str) -> str:
        if isinstance(value, _Prose):
            return texts[value]
        if isinstance(value, _Exercise):
            return ex.solution_source(value, lang)
        return english_code(value) if lang == "en" else value

    return [maker(cell_id, resolve(value), *points) for maker, cell_id, value, *points in LAYOUT]


CELLS: list[Cell] = cells()
"""The default (Chinese) edition's cells."""
