"""The sandbox spec: how one submission's student code is confined, as JSON the launcher reads.

Plain data on its own module: the grader writes it, the launcher and the kernel manager read it, and neither of
those should import the other's dependencies.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

SPEC_ENV = "PREFIXBENCH_SANDBOX_SPEC"
"""The variable that hands the spec's path to the kernel manager inside the grading worker."""


@dataclass
class Spec:
    """How one submission's student code is confined; written as JSON next to the sandbox folder."""
    sandbox_dir: str
    uid: int | None = None  # None: keep the grader's user (not root, or privileges unavailable)
    isolate: bool = False  # private mount + network namespaces (needs root and unshare)
    hide: list[str] = field(default_factory=list)
    keep_ro: list[str] = field(default_factory=list)
    mask: list[str] = field(default_factory=list)  # folders inside kept paths covered again (the grader's code)
    memory_mb: int = 4096  # 0: no address-space limit
    cpu_s: int = 900
    nproc: int = 128
    fsize_mb: int = 64
    nofile: int = 1024
    output_chars: int = 2_000_000  # per cell (one execute request)
    output_total_chars: int = 20_000_000  # for the whole notebook
    env: dict[str, str] = field(default_factory=dict)

    def write(self, path: Path) -> Path:
        Path(path).write_text(json.dumps(asdict(self), indent=1, allow_nan=False), encoding="utf-8")
        return Path(path)

    @classmethod
    def read(cls, path: Path) -> "Spec":
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))
