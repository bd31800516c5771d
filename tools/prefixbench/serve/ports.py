"""Loopback ports for processes we start: picked here, bound there seconds or minutes later.

A port picked by binding port 0 (``free_port``) comes from the kernel's ephemeral range, the same range every
outgoing connection takes its local port from. Between the pick and the bind (a vLLM server binds its HTTP port
after importing torch; a KV-event address stays unbound while servers start) any connection on the machine may
take it, and a publisher that keeps dialling a port nobody listens on yet can even connect to itself (a TCP
simultaneous open, when the kernel hands it the very port it dials). A CI run lost a module to that. So the ports
of the servers, routers and KV-event addresses this project starts come from ``steady_port``: free now, and
below the ephemeral range, where only another explicit bind can take them.
"""

from __future__ import annotations

import contextlib
import random
import socket
from pathlib import Path

HOST = "127.0.0.1"
EPHEMERAL_PORTS_FROM = 32768
"""Linux's default lower bound of ``net.ipv4.ip_local_port_range`` (``ephemeral_range()`` reads the real one)."""
STEADY_PORTS_FROM = 10000


def free_port(host: str = HOST) -> int:
    """A port free now, from the ephemeral range: bind it again at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def ephemeral_range(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> tuple[int, int]:
    """The kernel's ephemeral ports, ``(low, high)``; Linux's default where the file is missing or odd."""
    try:
        low, high = (int(v) for v in path.read_text().split())
    except (OSError, ValueError):
        return EPHEMERAL_PORTS_FROM, 60999
    return low, high


def _steady_socket(host: str, tries: int = 200, rng: random.Random | None = None) -> socket.socket:
    """A socket bound to a free port outside the ephemeral range (the caller closes it). Random, so that
    parallel test workers rarely pick the same one."""
    low = ephemeral_range()[0]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if low <= STEADY_PORTS_FROM + 100:  # a kernel with no room below its ephemeral range
            sock.bind((host, 0))
            return sock
        rng = rng or random.Random()
        for _ in range(tries):
            try:
                sock.bind((host, rng.randrange(STEADY_PORTS_FROM, low)))
            except OSError:  # taken: an unbound socket may try another port
                continue
            return sock
    except BaseException:
        sock.close()
        raise
    sock.close()
    raise OSError(f"no free port in {STEADY_PORTS_FROM}..{low - 1} on {host} after {tries} tries")


def steady_port(host: str = HOST, tries: int = 200, rng: random.Random | None = None) -> int:
    """A port free now and outside the ephemeral range, so no outgoing connection (or self-connecting
    publisher) takes it before it is bound."""
    with _steady_socket(host, tries, rng) as sock:
        return sock.getsockname()[1]


def steady_ports(count: int, host: str = HOST) -> list[int]:
    """``count`` distinct ``steady_port``s (one per server that will publish, or be published to): each stays
    bound while the next is picked, so none is picked twice."""
    with contextlib.ExitStack() as held:
        return [held.enter_context(_steady_socket(host)).getsockname()[1] for _ in range(count)]
