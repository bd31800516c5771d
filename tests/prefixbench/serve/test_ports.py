"""serve.ports: a port that must stay free for minutes comes from below the kernel's ephemeral range."""

import random
import socket

import pytest

from tools.prefixbench.serve import ports


def test_a_steady_port_is_free_and_below_the_ephemeral_range():
    low, _ = ports.ephemeral_range()
    for _ in range(20):
        port = ports.steady_port()
        assert ports.STEADY_PORTS_FROM <= port < low
        with socket.socket() as sock:
            sock.bind((ports.HOST, port))  # free: binds


def test_a_held_port_is_skipped():
    low, _ = ports.ephemeral_range()
    first = random.Random(7).randrange(ports.STEADY_PORTS_FROM, low)
    with socket.socket() as held:
        held.bind((ports.HOST, first))
        held.listen()
        assert ports.steady_port(rng=random.Random(7)) != first


def test_distinct_ports_and_the_range_read_from_the_kernel_file(tmp_path, monkeypatch):
    assert len(set(ports.steady_ports(5))) == 5
    (tmp_path / "range").write_text("40000\t50000\n")
    assert ports.ephemeral_range(tmp_path / "range") == (40000, 50000)
    (tmp_path / "odd").write_text("forty\n")
    assert ports.ephemeral_range(tmp_path / "odd") == ports.ephemeral_range(tmp_path / "missing") \
        == (ports.EPHEMERAL_PORTS_FROM, 60999)
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (ports.STEADY_PORTS_FROM + 50, 60999))
    assert ports.steady_port() >= ports.STEADY_PORTS_FROM + 50  # no room below: an ordinary free port


def test_no_free_port_after_the_tries_is_an_error(monkeypatch):
    class Taken(socket.socket):
        def bind(self, address):
            raise OSError("taken")

    monkeypatch.setattr(ports.socket, "socket", Taken)
    with pytest.raises(OSError, match="no free port"):
        ports.steady_port(tries=3)


def test_the_servers_and_routers_this_project_starts_listen_below_the_ephemeral_range():
    from tools.prefixbench.serve.router import RouterConfig, VllmRouter
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    low, _ = ports.ephemeral_range()
    server = VllmServer(ServerConfig(model="m", served_model_name="m", enable_prefix_caching=True),
                        platform={"kind": "cpu"})
    router = VllmRouter(RouterConfig(workers=["http://127.0.0.1:1"]))
    assert f"--port {server.port}" in " ".join(server.argv()) and server.port < low
    assert router.port < low and router.metrics_port < low and router.port != router.metrics_port
    explicit = VllmServer(ServerConfig(model="m", served_model_name="m", enable_prefix_caching=True, port=40123),
                          platform={"kind": "cpu"})
    assert explicit.port == 40123  # a port the caller chose is kept
