"""Layer 5, measurement against a running server: the streaming token-id client (``client``), Prometheus
snapshots and deltas (``metrics``), where the server and its metrics are (``endpoints``), and the memory of a
server's process tree (``memory``)."""
