"""The peers' side of the PEERS workload: one module per peer (its task and its client).

Each module defines the peer's no-op task at import time (a worker command imports it),
reading its store from ``$BENCH_PEER_URL``, and offers the harness:

- ``worker_command(concurrency)``: the peer's own worker command (``None``: its defaults);
- ``open_client(url)``: a ``Client`` that enqueues one job at a time.
"""
