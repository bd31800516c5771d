"""A SIGTERM whose exception a finalizer swallowed still stops the command (``core.termination``).

A Python signal handler runs wherever the main thread is, and an exception raised inside a finalizer cannot be
passed on: urllib3 closes a pool's connections from a ``weakref.finalize``, which runs as ``requests`` finishes
a call. A SIGTERM handled there was lost, and a ``g0g1`` signalled as its servers came up ran to the end and
exited 0 (the project's CI, twice). Here the signal is sent from inside that very finalizer, so the handler's
exception is swallowed every time; each case runs in its own process against fake servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")

from backend_fixtures import FakeServer, two_fake_servers, write_workload  # noqa: E402
from tools.prefixbench.core import termination  # noqa: E402
from tools.prefixbench.core.paths import REPO_ROOT  # noqa: E402

TESTS = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_arrival_left():
    """The in-process cases note arrivals in this worker's module state: none may reach the next test (a
    checkpoint there would raise ``Terminated``, a KeyboardInterrupt that ends pytest's session)."""
    termination.forget_arrivals()
    yield
    termination.forget_arrivals()

_SIGNAL_IN_A_POOL_FINALIZER = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import requests
from urllib3 import connectionpool

original, closes = connectionpool._close_pool_connections, [0]
at, _, name = sys.argv[2].partition(":")  # "4" (SIGTERM at the fourth pool closed), "4:SIGINT", "4+" (each from it)
sent = getattr(signal, name or "SIGTERM")
if sent == signal.SIGINT:  # Ctrl-C as in a terminal (a test worker started in the background ignores it)
    signal.signal(signal.SIGINT, signal.default_int_handler)

def close_pool(pool):  # what weakref.finalize calls once a pool is dropped: the signal lands inside it
    closes[0] += 1
    if closes[0] == int(at.rstrip("+")) or (at.endswith("+") and closes[0] > int(at[:-1])):
        os.kill(os.getpid(), sent)
    original(pool)

connectionpool._close_pool_connections = close_pool
"""

_CLIENT = _SIGNAL_IN_A_POOL_FINALIZER + r"""
from tools.prefixbench.cli.signals import Terminated, terminate_as_interrupt
from tools.prefixbench.measure import client

outcome = "returned"
with terminate_as_interrupt():
    requests.get(sys.argv[3] + "/health", timeout=10)  # its pool's finalizer swallows the handler's exception
    went_on = True
    try:
        client.send(sys.argv[3], "m", client.request_specs([{"id": "r", "prompt_token_ids": [1, 2, 3],
                                                              "max_tokens": 2}]))
    except Terminated as exc:
        outcome = f"terminated {exc.signum}"
    except KeyboardInterrupt:
        outcome = "interrupted"
print(outcome, went_on)
"""

_SERVER_START = _SIGNAL_IN_A_POOL_FINALIZER + r"""
import subprocess, time
from tools.prefixbench.cli.signals import Terminated, terminate_as_interrupt
from tools.prefixbench.serve.router import RouterConfig, VllmRouter
from tools.prefixbench.serve.server import ServerConfig, VllmServer

timeout_s = float(sys.argv[3])
if sys.argv[4] == "server":
    wait = VllmServer(ServerConfig(model="m", served_model_name="m", enable_prefix_caching=True,
                                   startup_timeout_s=timeout_s), platform={"kind": "cpu"})._wait_healthy
else:
    wait = VllmRouter(RouterConfig(workers=["http://127.0.0.1:9"], startup_timeout_s=timeout_s))._wait_ready
process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # never answers
started = time.monotonic()
try:
    with terminate_as_interrupt():
        wait(process, started)
    print("ready")
except Terminated:
    print("terminated", round(time.monotonic() - started, 1))
except Exception as exc:
    print(type(exc).__name__, round(time.monotonic() - started, 1))
finally:
    process.kill()
"""

_COMMAND = _SIGNAL_IN_A_POOL_FINALIZER + r"""
from tools.prefixbench.cli import main
sys.exit(main(sys.argv[3:]))
"""


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script, str(TESTS), *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)


def _completions(server: FakeServer) -> int:
    return len(server.prompts)


@pytest.mark.parametrize("sent, said", [("SIGTERM", ["terminated", "15"]), ("SIGINT", ["interrupted"])])
def test_a_swallowed_signal_stops_the_next_batch_before_anything_is_sent(sent, said):
    """The health probe's pool finalizer swallows the exception (the script goes on, as before); the next batch
    of requests raises it again before sending (``Terminated``, or ``KeyboardInterrupt`` for a Ctrl-C), and
    nothing prints "Exception ignored". On the previous code the batch was sent and returned, and stderr held the
    swallowed exception's traceback."""
    with FakeServer() as server:
        done = _run(_CLIENT, f"1:{sent}", server.base_url)
        completions = _completions(server)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [*said, "True"], (done.stdout, done.stderr[-2000:])
    assert completions == 0
    assert "Exception ignored" not in done.stderr and "Interrupt" not in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("at_close, code, last", [("1", 128 + 15, "terminated"), ("4", 128 + 15, "terminated"),
                                                  ("4:SIGINT", 3, "interrupted")])
def test_g0g1_signalled_while_requests_closes_a_pool_ends_interrupted(tmp_path, at_close, code, last):
    """``g0g1`` against two fake servers, SIGTERM from inside urllib3's pool finalizer at the first pool closed
    (checking the servers, before the summary) or the fourth (inside the run), or Ctrl-C at the fourth: exit
    128 + 15 (3 for Ctrl-C) and, where the summary was begun, ``interrupted``; no request is sent after the
    signal. On the previous code each ran to the end, exit 0, summary ok, every request sent."""
    workload = write_workload(tmp_path / "w.jsonl", 6)
    out = tmp_path / "out"
    with two_fake_servers() as (g0, g1):
        done = _run(_COMMAND, str(at_close), "g0g1", "--model", "m", "--g0-endpoint", g0.base_url,
                    "--g1-endpoint", g1.base_url, "--workload", str(workload), "--out", str(out), "--json")
        sent = _completions(g0) + _completions(g1)
    assert done.returncode == code, (done.returncode, done.stderr[-2000:])
    summary = out / "69_prefix_cache.json"
    if summary.exists():
        assert json.loads(summary.read_text())["status"] == "interrupted"
    assert sent == 0, sent
    assert done.stderr.strip().splitlines()[-1] == last, done.stderr[-2000:]


def test_hitrate_signalled_while_requests_closes_a_pool_writes_an_interrupted_result(tmp_path):
    """A live command (``run.live.guarded``): the swallowed signal becomes the run's ``interrupted`` status and
    exit 3 with the partial result written, as a SIGTERM that was not swallowed does."""
    workload = write_workload(tmp_path / "w.jsonl", 6)
    out = tmp_path / "hit.json"
    with two_fake_servers() as (server, _):
        done = _run(_COMMAND, "2", "hitrate", "--endpoint", server.base_url, "--model", "m", "--workload",
                    str(workload), "--output", str(out), "--json")
    assert done.returncode == 3, (done.returncode, done.stderr[-2000:])
    assert json.loads(out.read_text())["status"] == "interrupted"


@pytest.mark.parametrize("kind", ["server", "router"])
def test_a_start_signalled_while_a_readiness_probe_closes_its_pool_stops_at_the_next_probe(kind):
    """``VllmServer`` waits for ``/health`` and ``VllmRouter`` for ``/v1/models``, one ``requests`` call per
    probe: a SIGTERM swallowed by the first probe's pool finalizer stops the wait at the next probe, not after
    the whole startup timeout (on the previous code: ``ServerError`` / ``RouterError`` when the 20 s ran out)."""
    done = _run(_SERVER_START, "1", "20", kind)
    assert done.stdout.split()[0] == "terminated", (done.stdout, done.stderr[-2000:])
    assert float(done.stdout.split()[1]) < 10


_ENDS_AFTER_THE_LAST_STEP = _SIGNAL_IN_A_POOL_FINALIZER + r"""
from tools.prefixbench.cli.signals import Terminated, terminate_as_interrupt

try:
    with terminate_as_interrupt():
        requests.get(sys.argv[3] + "/health", timeout=10)  # swallowed, and no step of a command follows
        print("went on", flush=True)
        if sys.argv[4] == "nested":
            with terminate_as_interrupt():  # a block inside: the outer one keeps the policy and what it noted
                pass
    print("ended normally")
except Terminated as exc:
    print("terminated", exc.signum)
"""


@pytest.mark.parametrize("inner", ["alone", "nested"])
def test_a_signal_swallowed_after_the_last_step_is_named_as_the_command_ends(inner):
    """Nothing after the swallowing call raises it again: leaving the policy's block names it in one line (also
    with a block inside it that came and went) instead of Python's "Exception ignored" traceback, and does not
    raise it, as the command writes its results after the block (on e448b07: the traceback)."""
    with FakeServer() as server:
        done = _run(_ENDS_AFTER_THE_LAST_STEP, "1", server.base_url, inner)
    assert done.stdout.splitlines() == ["went on", "ended normally"], (done.stdout, done.stderr[-2000:])
    assert done.stderr.strip().splitlines() == [
        "note: a SIGTERM came after the run's last step (a finalizer dropped its exception); the results are "
        "written as they stand"], done.stderr[-2000:]


def test_an_interruption_a_live_run_handled_is_not_raised_again():
    """``run.live.guarded`` turns a delivered SIGTERM into the run's ``interrupted`` status and forgets it: a
    later step in the same process (a second run, the end of the policy's block) is not interrupted by it."""
    from tools.prefixbench.run import live as lv

    run = lv.start("test", endpoint="http://127.0.0.1:9", model="m", metrics=[], config={})
    assert lv.guarded(run, lambda: termination.raise_terminated(15, None)) == "interrupted"
    assert termination.arrived() is None
    termination.check_terminated()


def test_a_terminated_the_caller_caught_itself_is_not_raised_again_as_the_block_ends():
    """Only a signal Python reported as swallowed is raised at the block's end: one whose exception reached the
    caller (here caught by the test) is the caller's, as ``measure/test_client_loop.py``'s scripts catch theirs."""
    from tools.prefixbench.cli.signals import terminate_as_interrupt

    with terminate_as_interrupt():
        with pytest.raises(termination.Terminated):
            termination.raise_terminated(15, None)
    assert termination.arrived() is None


def test_check_terminated_raises_each_arrival_once_and_nothing_without_one():
    termination.forget_arrivals()
    termination.check_terminated()  # nothing arrived: nothing raised
    with pytest.raises(termination.Terminated):
        termination.raise_terminated(15, None)
    with pytest.raises(termination.Terminated) as raised:
        termination.check_terminated()
    assert raised.value.signum == 15
    termination.check_terminated()  # raised once already
    with pytest.raises(termination.Terminated):
        termination.raise_terminated(15, None)
    termination.forget_arrivals()
    termination.check_terminated()
    with pytest.raises(termination.Terminated):  # a swallowed SIGTERM, then a swallowed Ctrl-C: the SIGTERM wins
        termination.raise_terminated(15, None)
    termination.note_swallowed(15)  # as the hook reports each
    termination.note_swallowed(2)
    assert termination.swallowed() == 15
    with pytest.raises(termination.Terminated):
        termination.check_terminated()
    termination.note_swallowed(2)  # a Ctrl-C alone
    with pytest.raises(KeyboardInterrupt) as raised:
        termination.check_terminated()
    assert type(raised.value) is KeyboardInterrupt


@pytest.mark.parametrize("sent", ["SIGINT", "SIGTERM"])
def test_signals_swallowed_again_while_hitrate_stops_leave_its_interrupted_result_written(tmp_path, sent):
    """Every pool closed from the second on swallows a signal: the first is raised at the next step and ``hitrate``
    stops; the others land while it takes its last scrape and winds down, and must not cost it the result it
    writes after the policy's block (30c9b2c raised them there: exit 3 and the file left ``running``, no
    Markdown). Exit 3, the result ``interrupted`` with its Markdown beside it, the late signal named in one
    line."""
    workload = write_workload(tmp_path / "w.jsonl", 6)
    out = tmp_path / "hit.json"
    with two_fake_servers() as (server, _):
        done = _run(_COMMAND, f"2+:{sent}", "hitrate", "--endpoint", server.base_url, "--model", "m", "--workload",
                    str(workload), "--output", str(out), "--json")
    assert done.returncode == 3, (done.returncode, done.stderr[-2000:])
    assert json.loads(out.read_text())["status"] == "interrupted"
    assert out.with_suffix(".md").exists()
    assert f"note: a {sent} came after the run's last step" in done.stderr, done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr
