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
