"""vLLM's KV events from a publisher that binds: the subscriber connects, so several can listen at once.

``measure.kv_events.KvEventRecorder`` binds and the one server it watches connects to it. Behind a router that
reads the same events (``vllm-router --policy kv_aware --kv-event-source WORKER=ENDPOINT``), each replica's
publisher must bind instead (``"endpoint": "tcp://*:PORT"`` in ``--kv-events-config``) and every reader
connects: the router and this subscriber get the same batches.
"""

from __future__ import annotations

import threading

from .kv_events import KvEventRecorder


class KvEventSubscriber(KvEventRecorder):
    """A ``KvEventRecorder`` that connects to ``address`` (a publisher's ``tcp://HOST:PORT``) instead of binding."""

    def start(self) -> "KvEventSubscriber":
        import zmq

        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.SUBSCRIBE, b"")
        self._socket.setsockopt(zmq.LINGER, 0)
        self._monitor = self._socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        self._socket.connect(self.address)
        self.endpoint = self.address
        self._connected = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="kv-events-sub", daemon=True)
        self._thread.start()
        return self
