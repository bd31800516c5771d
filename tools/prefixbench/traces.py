"""Public face for Mooncake traces: load them (``workload.traces``) and replay them (``simulate.replay``).

The course notebook does ``from tools.prefixbench.traces import TRACES, TraceUnavailable, load_trace,
replay_trace``; inside the library, import the layer modules instead.
"""

from .simulate.replay import replay_trace
from .workload.traces import (
    TRACE_BLOCK_TOKENS, TRACES, UPSTREAM_BASE_URL, TraceFile, TraceRequest, TraceUnavailable, download_trace,
    load_trace, parse_trace_line, resolve_trace,
)

__all__ = ["TRACE_BLOCK_TOKENS", "TRACES", "UPSTREAM_BASE_URL", "TraceFile", "TraceRequest", "TraceUnavailable",
           "download_trace", "load_trace", "parse_trace_line", "replay_trace", "resolve_trace"]
