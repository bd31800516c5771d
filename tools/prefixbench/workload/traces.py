"""Real request traces (Mooncake FAST'25 format): fetch, verify and load them (``simulate.replay`` replays them).

One JSON object per line with ``input_length`` (tokens) and ``hash_ids``: one id per 512-token block of the
input, prefix-chained (two requests share their first k blocks exactly when their first k ids are equal).
The last id of a request whose length is not a multiple of 512 names a partial block, which never hits.

Traces are not shipped with the project. A name (``conversation``, ``synthetic``) resolves, in order, to
``$PREFIXBENCH_TRACE_DIR/<file>``, the download cache (``$PREFIXBENCH_CACHE/traces``, default
``~/.cache/prefixbench/traces``), or a fresh download from the upstream URL (``$PREFIXBENCH_TRACE_BASE_URL``
overrides the base, e.g. for a mirror). Every file is checked against its published sha256.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..core.bounds import OUTPUT_TOKENS, PROMPT_TOKENS, Bound
from ..core.errors import InputError
from ..core.files import read_jsonl
from ..core.paths import trace_cache_dir

TRACE_BLOCK_TOKENS = 512
TRACE_OUTPUT_TOKENS = Bound(0, OUTPUT_TOKENS.high, integer=True, unit="tokens")
"""A trace line's ``output_length``: 0 allowed (the trace may record none), at most what a request may ask for."""
UPSTREAM_BASE_URL = "https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/FAST25-release/traces"


@dataclass(frozen=True)
class TraceFile:
    filename: str
    size: int
    sha256: str
    paper_cache_ratio: float
    """Table 2 of the Mooncake FAST'25 paper: the best possible prefix-cache hit ratio it reports."""


TRACES = {
    "conversation": TraceFile("conversation_trace.jsonl", 3029533,
                              "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df", 0.40),
    "synthetic": TraceFile("synthetic_trace.jsonl", 1136313,
                           "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131", 0.66),
}


class TraceUnavailable(InputError):
    """The trace is neither on disk nor downloadable (offline, blocked, or a corrupt download)."""


@dataclass(frozen=True)
class TraceRequest:
    input_length: int
    hash_ids: tuple[int, ...]
    output_length: int | None = None
    """Generated tokens (the trace's ``output_length``; ``None`` when absent): what the engine model decodes."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verified(path: Path, trace: TraceFile) -> bool:
    return path.is_file() and path.stat().st_size == trace.size and _sha256(path) == trace.sha256


def download_trace(name: str, dest_dir: Path | None = None, *, base_url: str | None = None,
                   timeout: float = 30.0) -> Path:
    """Download a named trace into the cache, verify its sha256, and move it into place atomically."""
    import requests  # only needed on first use

    trace = TRACES[name]
    dest_dir = Path(dest_dir or trace_cache_dir())
    base = (base_url or os.environ.get("PREFIXBENCH_TRACE_BASE_URL") or UPSTREAM_BASE_URL).rstrip("/")
    url = f"{base}/{trace.filename}"
    try:  # a read-only home or a PREFIXBENCH_CACHE that is a file: the same advice as any other missing trace
        dest_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{trace.filename}.", dir=dest_dir)
    except OSError as exc:
        raise TraceUnavailable(name, f"cannot write to the trace cache {dest_dir} ({exc.strerror or exc}); set "
                                     f"PREFIXBENCH_CACHE to a writable folder, or PREFIXBENCH_TRACE_DIR to a folder "
                                     f"that has {trace.filename}") from None
    tmp = Path(tmp_name)
    hint = (f"place {trace.filename} in {dest_dir} (or set PREFIXBENCH_TRACE_DIR to a folder that has it, "
            f"or PREFIXBENCH_TRACE_BASE_URL to a mirror)")
    try:
        with os.fdopen(fd, "wb") as out, requests.get(url, stream=True, timeout=timeout) as response:
            response.raise_for_status()
            for chunk in response.iter_content(chunk_size=1 << 16):
                out.write(chunk)
        if not _verified(tmp, trace):
            raise TraceUnavailable(name, f"download from {url} does not match the published size/sha256; {hint}")
        os.chmod(tmp, 0o644)
        final = dest_dir / trace.filename
        os.replace(tmp, final)
        return final
    except requests.RequestException as exc:
        raise TraceUnavailable(name, f"cannot download {url} ({type(exc).__name__}); {hint}") from None
    except OSError as exc:  # after requests' own errors, which are OSErrors too: the disk filled up, say
        raise TraceUnavailable(name, f"cannot save {trace.filename} in {dest_dir} ({exc.strerror or exc}); "
                                     f"{hint}") from None
    finally:
        tmp.unlink(missing_ok=True)


def resolve_trace(name_or_path: str | os.PathLike, *, allow_download: bool = True) -> Path:
    """A path to the trace file: an existing path as given, else a named trace found or fetched."""
    text = str(name_or_path)
    if text not in TRACES:
        path = Path(text).expanduser()
        if path.is_file():
            return path
        raise InputError("trace", f"{text!r} is neither a file nor a known trace name ({', '.join(TRACES)})")
    trace = TRACES[text]
    candidates = []
    if os.environ.get("PREFIXBENCH_TRACE_DIR"):
        candidates.append(Path(os.environ["PREFIXBENCH_TRACE_DIR"]) / trace.filename)
    candidates.append(trace_cache_dir() / trace.filename)
    for path in candidates:
        if _verified(path, trace):
            return path
    if not allow_download:
        raise TraceUnavailable(text, f"not found in {', '.join(map(str, candidates))} and downloads are off")
    return download_trace(text)


def parse_trace_line(where: str, obj: dict, block_tokens: int = TRACE_BLOCK_TOKENS) -> TraceRequest:
    if "input_length" not in obj:
        raise InputError(f"{where}.input_length", "is missing")
    length = PROMPT_TOKENS.check(f"{where}.input_length", obj["input_length"])
    if "hash_ids" not in obj:
        raise InputError(f"{where}.hash_ids", "is missing (one id per 512-token block is required)")
    ids = obj["hash_ids"]
    if not isinstance(ids, list):
        raise InputError(f"{where}.hash_ids", f"must be a list of integers, got {type(ids).__name__}")
    if not all(type(h) is int and h >= 0 for h in ids):
        j = next(j for j, h in enumerate(ids) if not (type(h) is int and h >= 0))
        raise InputError(f"{where}.hash_ids[{j}]", f"must be a non-negative integer, got {ids[j]!r}")
    expected = math.ceil(length / block_tokens)
    if len(ids) != expected:
        raise InputError(f"{where}.hash_ids", f"has {len(ids)} ids but input_length {length} needs "
                                              f"ceil({length}/{block_tokens}) = {expected}")
    output = obj.get("output_length")
    if output is not None:
        output = TRACE_OUTPUT_TOKENS.check(f"{where}.output_length", output)
    return TraceRequest(length, tuple(ids), output)


def load_trace(name_or_path: str | os.PathLike, *, allow_download: bool = True) -> list[TraceRequest]:
    path = resolve_trace(name_or_path, allow_download=allow_download)
    requests = [parse_trace_line(where, obj) for where, obj in read_jsonl(path)]
    if not requests:
        raise InputError(str(path), "trace has no requests")
    return requests
