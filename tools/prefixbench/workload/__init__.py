"""Layer 1, workloads: what is sent, as token ids. Generated (``generate``), read from files (``files``),
shaped for the hit-rate mode (``hitrate``), or taken from real Mooncake traces (``traces``); ``tokens`` is the one
check every prompt passes and ``chat_template`` says what a tokenizer's template would add.

``from tools.prefixbench.workload import generate_shared_prefix_workload, load_workload`` is the public face
(the course notebook uses it).
"""

from ..core.paths import DEFAULT_WORKLOAD
from .files import load_workload, save_workload
from .generate import DEFAULT_VOCAB, DEFAULT_WORKLOAD_ARGS, Workload, generate_shared_prefix_workload

__all__ = ["DEFAULT_WORKLOAD", "DEFAULT_VOCAB", "DEFAULT_WORKLOAD_ARGS", "Workload",
           "generate_shared_prefix_workload", "load_workload", "save_workload"]
