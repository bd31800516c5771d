"""Benchmark client: stream token-id completions at a fixed concurrency or request rate, time every token.

Why token ids: the prompt is sent as ``"prompt": [ids]`` so the server sees exactly the ids the simulator
predicts from; text would be re-tokenised and shared prefixes could drift apart at the boundary.

Each request is one streamed ``/v1/completions`` call with ``stream_options.continuous_usage_stats`` so every
chunk says how many output tokens it carries (TPOT and ITL then count tokens, not chunks) and the final chunk
carries ``usage.prompt_tokens_details.cached_tokens`` when the server reports it. ``ignore_eos`` keeps the
output length fixed so groups are comparable.

Definitions (all in milliseconds, from the client's clock):
- TTFT: request sent -> first chunk that carries an output token;
- ITL: gap between consecutive token-carrying chunks;
- TPOT: (last token time - first token time) / (output tokens - 1);
- E2E: request sent -> end of the stream.

"Sent" is when the client starts the request (as ``vllm bench serve`` times it); ``answered_at_s`` (in memory)
is when the response began, by which time the server had read the request.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import statistics
import threading
import time
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Sequence, TypeVar

from ..core.auth import auth_headers
from ..core.bounds import DEFAULT_REQUEST_TIMEOUT_S
from ..core.errors import InputError, require_int, require_number
from ..core.group_records import Aggregates, Stats
from ..core.progress import progress_bar
from ..core.request_rows import RequestRow
from ..core.termination import check_terminated

if TYPE_CHECKING:  # imported where requests are sent: a command that sends none starts 0.25 s sooner
    import aiohttp

PERCENTILES = (50, 90, 99)


@dataclass
class RequestResult:
    """One request as the client saw it. ``cached_tokens`` is ``None`` when the server did not report it."""

    id: str
    index: int
    status: str = "error"
    error: str | None = None
    http_status: int | None = None
    prompt_tokens: int | None = None
    sent_prompt_tokens: int = 0
    output_tokens: int | None = None
    cached_tokens: int | None = None
    sent_at_s: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    itl_ms: list[float] = field(default_factory=list)
    answered_at_s: float | None = None
    """When the server's response began (its headers came back; same clock as ``sent_at_s``): by then the
    server had read the request, so a request started later reached it later. ``sent_at_s`` alone cannot order
    requests: under load a request can wait for its connection long after it was started (47-75 ms median,
    ~400 ms at worst on this 2-core machine with six busy processes), while one started after it goes out on a
    kept-alive connection. In memory, not in rows; ``None`` when no response came."""
    output_token_ids: list[int] | None = None
    """The generated token ids, when the server streams them (vLLM with ``"return_token_ids": true``)."""
    stream_chunks: list[tuple[float, int]] = field(default_factory=list)
    """Each token-carrying chunk as ``(seconds after the run's start, output tokens so far)``: what the engine
    timeline (``simulate.overlap``) maps onto engine steps. Kept in memory, not in manifest rows."""
    usage_reason: str | None = None
    """Why a count the server reported was dropped (``None`` in its field): a number no server can mean, such as
    more cached tokens than the prompt holds, or a completion count that disagrees with the tokens streamed."""

    def as_row(self) -> RequestRow:
        """The row kept in result files: the ITL list is summarised, the aggregates keep the distribution."""
        gaps = self.itl_ms
        return RequestRow(
            id=self.id, index=self.index, status=self.status, error=self.error, http_status=self.http_status,
            prompt_tokens=self.prompt_tokens, sent_prompt_tokens=self.sent_prompt_tokens,
            output_tokens=self.output_tokens, cached_tokens=self.cached_tokens, sent_at_s=self.sent_at_s,
            ttft_ms=self.ttft_ms, tpot_ms=self.tpot_ms, e2e_ms=self.e2e_ms,
            output_token_ids=None if self.output_token_ids is None else list(self.output_token_ids),
            usage_reason=self.usage_reason, itl_ms_mean=statistics.fmean(gaps) if gaps else None,
            itl_ms_max=max(gaps) if gaps else None)

    def row(self) -> dict:
        """``as_row`` as JSON."""
        return self.as_row().to_json()


TOKEN_IDS_BODY = {"return_token_ids": True}
"""Asks vLLM to stream each request's generated token ids (the engine model replays them); other OpenAI servers
ignore the field."""


@dataclass
class RequestSpec:
    id: str
    prompt_token_ids: list[int]
    max_tokens: int
    cache_salt: str | None = None
    """vLLM keys the request's cached blocks by this salt too (``"cache_salt"`` in the body); ``None``: no salt."""


def request_specs(requests: Sequence[dict]) -> list[RequestSpec]:
    """Workload dicts (``id``, ``prompt_token_ids``, ``max_tokens``, optional ``cache_salt``) to request specs."""
    return [RequestSpec(str(r.get("id", i)), list(r["prompt_token_ids"]), int(r["max_tokens"]), r.get("cache_salt"))
            for i, r in enumerate(requests)]


def inclusive_cut(ordered: Sequence[float], p: int) -> float:
    """``statistics.quantiles(ordered, n=100, method="inclusive")[p - 1]`` for sorted, non-empty ``ordered`` (one
    value: that value), with that function's own integer and float steps, so equal bit for bit; it skips the other
    98 cut points, which the bootstrap (thousands of medians per summary) would otherwise pay for."""
    if len(ordered) == 1:
        return ordered[0]
    j, delta = divmod(p * (len(ordered) - 1), 100)
    return (ordered[j] * (100 - delta) + ordered[j + 1] * delta) / 100


def stats_of(values: Sequence[float]) -> Stats | None:
    """p50 / p90 / p99 with linear interpolation between order statistics (numpy's default), mean, count."""
    if not values:
        return None
    data = [float(v) for v in values]
    ordered = sorted(data)
    p50, p90, p99 = (inclusive_cut(ordered, p) for p in PERCENTILES)
    return Stats(p50=p50, p90=p90, p99=p99, mean=statistics.fmean(data), count=len(data))


def aggregates(results: Sequence[RequestResult], duration_s: float) -> Aggregates:
    """Percentiles over successful requests, throughput over the whole phase, and the error count."""
    ok = [r for r in results if r.status == "ok"]
    output_tokens = sum(r.output_tokens or 0 for r in ok)
    prompt_tokens = sum(r.prompt_tokens or r.sent_prompt_tokens for r in ok)
    rate = duration_s > 0 and bool(ok)
    return Aggregates(
        requests=len(results), successful=len(ok), error_count=len(results) - len(ok), duration_s=duration_s,
        ttft_ms=stats_of([r.ttft_ms for r in ok if r.ttft_ms is not None]),
        tpot_ms=stats_of([r.tpot_ms for r in ok if r.tpot_ms is not None]),
        itl_ms=stats_of([gap for r in ok for gap in r.itl_ms]),
        e2e_ms=stats_of([r.e2e_ms for r in ok if r.e2e_ms is not None]),
        prompt_tokens=prompt_tokens, output_tokens=output_tokens,
        throughput_tokens_per_s=output_tokens / duration_s if rate else None,
        total_tokens_per_s=(prompt_tokens + output_tokens) / duration_s if rate else None,
        request_throughput_per_s=len(ok) / duration_s if rate else None)


class MalformedChunk(ValueError):
    """A stream chunk that is not what an OpenAI-compatible server sends."""


def _object(value: object, field: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{field} must be an object, got {type(value).__name__}")
    return value


def _count(value: object, field: str) -> int | None:
    """A token count from the server: a non-negative integer or absent; anything else is malformed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{field} must be a non-negative integer, got {str(value)[:40]!r}")
    return value


def _usage_count(value: object, field: str, problems: list[str]) -> int | None:
    """A usage count: wrong types are malformed (``_count``); a negative integer is a number that cannot be, so it
    becomes ``None`` with the reason in ``problems``, and the request still counts."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        problems.append(f"{field} {value} is negative")
        return None
    return _count(value, field)


def _token_ids(value: object, field: str) -> list[int] | None:
    """A chunk's generated token ids: a list of non-negative integers or absent; anything else is malformed."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"{field} must be a list of token ids, got {type(value).__name__}")
    for item in value:
        _count(item, field)
    return value


class _Stream:
    """What one request's server-sent events said so far: token times, usage, and whether ``[DONE]`` came."""

    def __init__(self, result: RequestResult, max_tokens: int | None = None):
        self.result = result
        self.max_tokens = max_tokens
        self.token_times: list[float] = []
        self.token_counts: list[int] = []
        self.tokens_seen = 0
        self.counted = False
        """Whether the chunks carried running completion counts (``continuous_usage_stats``)."""
        self.reported_output: int | None = None
        self.problems: list[str] = []
        self.done = False

    def take(self, payload: str, now: float) -> bool:
        """Read one ``data:`` payload; ``False`` once the stream is over (``[DONE]`` or an error event).

        A payload that is not the OpenAI shape (not JSON, or JSON with the wrong types) raises
        ``MalformedChunk``: that request fails with the reason, the run goes on.
        """
        if payload == "[DONE]":
            self.done = True
            return False
        try:
            return self._take(json.loads(payload), now)
        except RecursionError:
            raise MalformedChunk(f"a chunk nested too deeply to read; chunk {payload[:120]!r}") from None
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise MalformedChunk(f"{type(exc).__name__}: {exc}; chunk {payload[:120]!r}") from None

    def _take(self, chunk: dict, now: float) -> bool:
        if not isinstance(chunk, dict):
            raise TypeError(f"a chunk must be a JSON object, got {type(chunk).__name__}")
        if "error" in chunk:
            self.result.error = f"server error in stream: {str(chunk['error'])[:300]}"
            return False
        usage = _object(chunk.get("usage"), "usage")
        if usage:
            if usage.get("prompt_tokens") is not None:
                self.result.prompt_tokens = _usage_count(usage["prompt_tokens"], "usage.prompt_tokens", self.problems)
            details = _object(usage.get("prompt_tokens_details"), "usage.prompt_tokens_details")
            if details.get("cached_tokens") is not None:
                self.result.cached_tokens = _usage_count(details["cached_tokens"], "cached_tokens", self.problems)
        choices = chunk.get("choices")
        if choices is not None and not isinstance(choices, list):
            raise TypeError(f"choices must be a list, got {type(choices).__name__}")
        if choices:
            self._take_ids(choices)
            count = _usage_count(usage.get("completion_tokens"), "usage.completion_tokens", self.problems)
            self.counted = self.counted or count is not None
            new = count - self.tokens_seen if count is not None else 1
            if new > 0:  # a chunk may carry several tokens, or none (held-back partial UTF-8)
                self.token_times.append(now)
                self.tokens_seen += new
                self.token_counts.append(self.tokens_seen)
        elif usage.get("completion_tokens") is not None:  # the final usage-only chunk
            self.reported_output = _usage_count(usage["completion_tokens"], "usage.completion_tokens",
                                                self.problems)
        return True

    def _take_ids(self, choices: list) -> None:
        first = _object(choices[0], "choices[0]")
        ids = _token_ids(first.get("token_ids"), "choices[0].token_ids")
        if ids is not None:
            self.result.output_token_ids = (self.result.output_token_ids or []) + ids

    def finish(self, sent: float, end: float) -> RequestResult:
        """The timings of a stream that ended normally, or the reason it does not count."""
        result, times = self.result, self.token_times
        if result.error:
            return result
        if not self.done:
            result.error = "stream ended before [DONE]"
            return result
        if not times:
            result.error = "no output token received"
            return result
        result.status = "ok"
        result.output_tokens = self.reported_output if self.reported_output is not None else self.tokens_seen
        self._drop_impossible()
        result.ttft_ms = (times[0] - sent) * 1000
        result.e2e_ms = (end - sent) * 1000
        result.itl_ms = [(b - a) * 1000 for a, b in pairwise(times)]
        if result.output_tokens is not None and result.output_tokens > 1 and len(times) > 1:
            result.tpot_ms = (times[-1] - times[0]) * 1000 / (result.output_tokens - 1)
        return result

    def _drop_impossible(self) -> None:
        """Counts that cannot be true become ``None``, each with its reason in ``usage_reason``: cached tokens
        beyond the prompt, an output count the streamed tokens contradict (``_output_problem``)."""
        result, problems = self.result, self.problems
        prompt = [n for n in (result.prompt_tokens, result.sent_prompt_tokens or None) if n is not None]
        if result.cached_tokens is not None and prompt and result.cached_tokens > min(prompt):
            problems.append(f"cached_tokens {result.cached_tokens} exceeds the prompt's {min(prompt)} tokens")
            result.cached_tokens = None
        output_problem = self._output_problem(result.output_tokens)
        if output_problem:
            problems.append(output_problem)
            result.output_tokens = None
        if problems:
            result.usage_reason = "; ".join(problems)[:300] + ": dropped, a server cannot mean it"

    def _output_problem(self, output: int | None) -> str | None:
        if output is None:
            return None
        if self.max_tokens is not None and max(output, self.tokens_seen) > self.max_tokens:
            return f"completion_tokens {max(output, self.tokens_seen)} exceeds the {self.max_tokens} asked for"
        ids = self.result.output_token_ids
        if ids is not None and len(ids) != output:
            return f"completion_tokens {output} disagrees with the {len(ids)} token ids streamed"
        if self.counted and output != self.tokens_seen:
            return f"completion_tokens {output} disagrees with the running count streamed ({self.tokens_seen})"
        if output < len(self.token_times):
            return f"completion_tokens {output} is fewer than the {len(self.token_times)} chunks that carried tokens"
        return None


async def _stream_one(session: aiohttp.ClientSession, spec: RequestSpec, *, url: str, model: str, index: int,
                      t0: float, extra_body: dict | None, timeout_s: float) -> RequestResult:
    """One streamed request, timed against the run's start ``t0`` (keyword-only: six of these are numbers or
    strings a positional call could swap unnoticed)."""
    import aiohttp

    result = RequestResult(id=spec.id, index=index, sent_prompt_tokens=len(spec.prompt_token_ids))
    body = {
        "model": model, "prompt": spec.prompt_token_ids, "max_tokens": spec.max_tokens, "temperature": 0.0,
        "stream": True, "ignore_eos": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        **(extra_body or {}),
    }
    if spec.cache_salt is not None:
        body["cache_salt"] = spec.cache_salt
    sent = time.perf_counter()
    result.sent_at_s = sent - t0
    stream = _Stream(result, spec.max_tokens)
    try:
        async with session.post(url, json=body) as response:
            result.answered_at_s = time.perf_counter() - t0
            result.http_status = response.status
            if response.status != 200:
                text = (await response.text())[:300]
                result.error = f"HTTP {response.status}: {text}"
                return result
            async for raw in response.content:
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith("data:") and not stream.take(line[5:].strip(), time.perf_counter()):
                    break
    except asyncio.TimeoutError:
        result.error = f"no complete answer within {timeout_s:g} s (the request timeout)"
        return result
    except aiohttp.ClientError as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:300] or type(exc).__name__
        return result
    except MalformedChunk as exc:
        result.error = f"malformed stream chunk: {exc}"[:300]
        return result
    result = stream.finish(sent, time.perf_counter())
    result.stream_chunks = [(t - t0, n) for t, n in zip(stream.token_times, stream.token_counts, strict=True)]
    return result


def arrival_offsets(count: int, request_rate: float | None, *, poisson: bool = False, seed: int = 0) -> list[float]:
    """Send times in seconds after the start: all at 0 (concurrency decides), evenly spaced, or Poisson."""
    if request_rate is None:
        return [0.0] * count
    rng = random.Random(seed)
    offsets, t = [], 0.0
    for _ in range(count):
        offsets.append(t)
        t += rng.expovariate(request_rate) if poisson else 1.0 / request_rate
    return offsets


async def send_requests_async(base_url: str | Sequence[str], model: str, specs: Sequence[RequestSpec], *, concurrency: int = 1,
                              request_rate: float | None = None, poisson: bool = False, seed: int = 0,
                              timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float | None = None,
                              extra_body: dict | None = None,
                              on_done: Callable[[RequestResult], None] | None = None,
                              offsets: Sequence[float] | None = None,
                              origin: float | None = None) -> tuple[list, float]:
    """Send ``specs`` in order; at most ``concurrency`` in flight, not earlier than their arrival offsets.

    Each result's times (``sent_at_s``, ``answered_at_s``, ``stream_chunks``) count from ``origin`` (a
    ``time.perf_counter()`` reading: a caller's clock over several batches), by default the batch's start;
    the offsets and the returned duration count from the batch's start.

    A request gets ``timeout_s`` in all; after ``deadline_s`` the requests still waiting or running are
    cancelled and come back as failed rows that say so, so one server that stops answering cannot hold a run.
    """
    # one base URL for every request, or one per request (client-side routing over replicas)
    urls = [u.rstrip("/") + "/v1/completions" for u in ([base_url] * len(specs) if isinstance(base_url, str)
                                                         else base_url)]
    semaphore = asyncio.Semaphore(concurrency)
    if offsets is None:  # given offsets (seconds after the start, e.g. a trace's timestamps) win over a rate
        offsets = arrival_offsets(len(specs), request_rate, poisson=poisson, seed=seed)
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=timeout_s)
    connector = aiohttp.TCPConnector(limit=max(concurrency, 1), force_close=False)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector, headers=auth_headers()) as session:
        t0 = time.perf_counter()
        clock = t0 if origin is None else origin
        deadline_passed = False

        async def run(index: int, spec: RequestSpec) -> RequestResult:
            try:
                delay = offsets[index] - (time.perf_counter() - t0)
                if delay > 0:
                    await asyncio.sleep(delay)
                async with semaphore:
                    result = await _stream_one(session, spec, url=urls[index], model=model, index=index,
                                               t0=clock, extra_body=extra_body, timeout_s=timeout_s)
            except asyncio.CancelledError:
                if not deadline_passed:  # Ctrl-C / SIGTERM: the caller keeps what finished
                    raise
                result = RequestResult(id=spec.id, index=index, sent_prompt_tokens=len(spec.prompt_token_ids),
                                       error=f"not finished when the deadline of {deadline_s:g} s passed")
            if on_done is not None:
                on_done(result)
            return result

        tasks = []
        for index, spec in enumerate(specs):
            tasks.append(asyncio.create_task(run(index, spec)))
            await asyncio.sleep(0)  # let each task reach the semaphore in order, so send order = list order
        _, pending = await asyncio.wait(tasks, timeout=deadline_s)
        deadline_passed = bool(pending)
        for task in pending:
            task.cancel()
        results = await asyncio.gather(*tasks)
        duration = time.perf_counter() - t0
    return list(results), duration


@dataclass(frozen=True)
class SentPhase:
    """What one phase of requests gave: every result (in list order), its manifest rows, its aggregates."""

    results: list[RequestResult]
    rows: list[RequestRow]
    aggregates: Aggregates


def send_phase(base_url: str | Sequence[str], model: str, requests: Sequence[dict] | Sequence[RequestSpec], *,
               concurrency: int = 1, request_rate: float | None = None, poisson: bool = False, seed: int = 0,
               timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float | None = None,
               extra_body: dict | None = None, progress: bool | str = False) -> SentPhase:
    """Send token-id requests (workload dicts or ``RequestSpec``); ``progress`` shows a tqdm bar (a string is
    its label)."""
    concurrency = require_int("concurrency", concurrency, minimum=1)
    if request_rate is not None:
        request_rate = require_number("request_rate", request_rate, low=0.0)
        if request_rate == 0:
            raise InputError("request_rate", "must be > 0 (or None for no rate limit)")
    specs = [r if isinstance(r, RequestSpec) else request_specs([r])[0] for r in requests]
    for i, spec in enumerate(specs):
        if not spec.prompt_token_ids:
            raise InputError(f"requests[{i}].prompt_token_ids", "is empty")
    results, duration = send(base_url, model, specs, concurrency=concurrency, request_rate=request_rate,
                             poisson=poisson, seed=seed, timeout_s=timeout_s, deadline_s=deadline_s,
                             extra_body=extra_body,
                             progress=(progress if isinstance(progress, str) else "requests") if progress else None)
    return SentPhase(results, [r.as_row() for r in results], aggregates(results, duration))


def run_requests(base_url: str | Sequence[str], model: str, requests: Sequence[dict] | Sequence[RequestSpec],
                 **options: Any) -> dict:
    """``send_phase`` as ``{"rows": [...], "results": [RequestResult], "aggregates": {...}}`` (JSON aggregates),
    for the callers that keep the phase as a dict."""
    sent = send_phase(base_url, model, requests, **options)
    return {"results": sent.results, "rows": [r.to_json() for r in sent.rows], "aggregates": sent.aggregates.to_json()}


def send(base_url: str | Sequence[str], model: str, specs: Sequence[RequestSpec], *, concurrency: int = 1,
         request_rate: float | None = None, poisson: bool = False, seed: int = 0,
         timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float | None = None,
         extra_body: dict | None = None, progress: str | None = None,
         collected: list | None = None, offsets: Sequence[float] | None = None,
         after_each: Callable[[RequestResult], None] | None = None,
         origin: float | None = None) -> tuple[list[RequestResult], float]:
    """``send_requests_async`` run to the end, with a bar labelled ``progress``. Each finished result is also
    appended to ``collected`` as it ends, so a caller interrupted half-way still has the finished rows.

    ``after_each`` runs (blocking the event loop) as each request ends: with concurrency 1 nothing else is in
    flight then, so it can read the servers' counters between two requests (``run.replicas``)."""
    with progress_bar(len(specs), progress) as advance:
        def done(result: RequestResult) -> None:
            if collected is not None:
                collected.append(result)
            if after_each is not None:
                after_each(result)
            advance()

        return run_loop(send_requests_async(
            base_url, model, specs, concurrency=concurrency, request_rate=request_rate, poisson=poisson,
            seed=seed, timeout_s=timeout_s, deadline_s=deadline_s, extra_body=extra_body, on_done=done,
            offsets=offsets, origin=origin))


Returned = TypeVar("Returned")


def run_loop(main: Coroutine[Any, Any, Returned]) -> Returned:
    """``asyncio.run(main)``, with the process's Python SIGTERM handler run as one of the loop's callbacks.

    Why: a handler that raises (``cli.signals``: SIGTERM unwinds like Ctrl-C) runs wherever the main thread is,
    and aiohttp turns any exception raised while it parses a response into an error on that response
    (``ClientPayloadError``), one the client may never read (a stream it already left): the signal was lost, and
    a SIGTERM'd ``g0g1`` finished its run and exited 0 (the project's CI, 2026-12-05). So while the loop runs, a
    SIGTERM only schedules the handler; the loop runs it between two callbacks, where what it raises leaves
    ``asyncio.run`` (which cancels the requests still running) and a handler that only takes note lets the run go
    on. A signal the loop had no turn left to handle is handed to the handler once the loop has closed. Without a
    Python handler (the default action, ignored, or not the main thread) this is ``asyncio.run``.

    Where a loop already runs in this thread (a Jupyter kernel: the course's GPU cell calls ``run_experiment``),
    ``asyncio.run`` refuses, so ``main`` runs on a loop of its own in a worker thread (``_in_own_thread``).

    A SIGTERM whose exception a finalizer swallowed before this batch stops it here, before anything is sent
    (``core.termination``)."""
    try:
        check_terminated()
    except BaseException:
        main.close()  # never started: no "coroutine was never awaited" warning
        raise
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # none: a command, a script, a test
        pass
    else:
        return _in_own_thread(main)
    handler = signal.getsignal(signal.SIGTERM)
    if not callable(handler) or threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)
    return _with_sigterm_in_the_loop(main, handler)


def _with_sigterm_in_the_loop(main: Coroutine[Any, Any, Returned], handler: Callable[[int, Any], Any]) -> Returned:
    """``asyncio.run(main)`` while SIGTERM calls ``handler`` as a loop callback (``run_loop`` says why)."""
    undelivered: list[int] = []
    raised: list[BaseException] = []

    async def held() -> Returned:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()

        def deliver(signum: int) -> None:
            undelivered.remove(signum)
            try:
                handler(signum, None)
            except (KeyboardInterrupt, SystemExit):  # asyncio lets these leave the loop
                raise
            except BaseException as exc:  # noqa: BLE001 - asyncio would log any other and go on: kept, raised below
                raised.append(exc)
                if task is not None:
                    task.cancel()

        def hold(signum: int, _frame: object) -> None:
            undelivered.append(signum)
            if not loop.is_closed():
                loop.call_soon_threadsafe(deliver, signum)  # woken through the loop's self-pipe

        signal.signal(signal.SIGTERM, hold)  # until the loop is closed: its shutdown runs aiohttp's callbacks too
        return await main

    try:
        returned = asyncio.run(held())
    except asyncio.CancelledError:
        if not raised:
            raise
        raise raised[0] from None
    finally:
        signal.signal(signal.SIGTERM, handler)
        late, undelivered[:] = list(undelivered), []
        for signum in late:  # came as the loop closed, its callback never run (whether main returned or raised)
            handler(signum, None)
    if raised:
        raise raised[0]
    return returned


def _in_own_thread(main: Coroutine[Any, Any, Returned]) -> Returned:
    """``asyncio.run(main)`` in a worker thread while this one waits; an interrupt here (a kernel's Interrupt is
    ``KeyboardInterrupt``) cancels ``main`` at its next ``await``, waits for its loop to close, and goes on up."""
    ran: dict[str, Any] = {}
    begun, ended = threading.Event(), threading.Event()

    async def tracked() -> Returned:
        ran["task"], ran["loop"] = asyncio.current_task(), asyncio.get_running_loop()
        begun.set()
        return await main

    def work() -> None:
        try:
            ran["returned"] = asyncio.run(tracked())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which raises it
            ran["raised"] = exc
        finally:
            begun.set()
            ended.set()

    # waited for through an Event, not Thread.join: an interrupt inside join (Python 3.11) can mark a thread
    # that still runs as stopped, and every later join then returns at once
    worker = threading.Thread(target=work, name="prefixbench-client-loop", daemon=True)
    worker.start()
    try:
        while not ended.wait(0.2):
            pass
    except BaseException:
        while not begun.is_set():
            _wait_through_interrupts(begun)
        while not ended.is_set():  # a second Interrupt while the loop winds down cancels again, never leaves it
            task, loop = ran.get("task"), ran.get("loop")
            if task is not None and loop is not None and not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(task.cancel)
                except RuntimeError:  # it closed in between: nothing left to cancel
                    pass
            _wait_through_interrupts(ended)
        worker.join(5)
        raise
    worker.join(5)
    if "raised" in ran:
        raise ran["raised"]
    return ran["returned"]


def _wait_through_interrupts(event: threading.Event) -> None:
    """``event.wait()`` that a KeyboardInterrupt (one more Interrupt of a kernel) ends early but never escapes."""
    try:
        event.wait()
    except KeyboardInterrupt:
        pass


def failure_summary(results: Sequence[RequestResult]) -> str | None:
    """``"3 of 20 requests failed (first: HTTP 500: ...)"``, or ``None`` when every request succeeded."""
    failed = [r for r in results if r.status != "ok"]
    if not failed:
        return None
    return f"{len(failed)} of {len(results)} requests failed (first: {failed[0].error})"


def server_order(results: Sequence[RequestResult]) -> list[RequestResult]:
    """Results in the order they were started (ties keep list order): the order the prediction replays. Requests
    started close together (closer than the first one's ``answered_at_s``) may have reached the server the other
    way round; ``run.replay.order_dependent`` counts the hits that could depend on it."""
    return sorted(results, key=lambda r: (r.sent_at_s if r.sent_at_s is not None else float("inf"), r.index))
