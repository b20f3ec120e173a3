"""The subjects beside workpool in the PEERS workload: one module per peer or raw bar.

Each module defines its tasks, ``noop`` (returns its input) and ``io_sleep`` (10 ms
asleep), at import time (a worker command imports it), reading its store from
``$BENCH_PEER_URL``, and offers the harness:

- ``worker_command(processes, concurrency)``: its own worker command with that many
  processes, at its default concurrency (``None``) or that one;
- ``open_client(url, task)``: a ``Client`` (``observe.py``) of that task.

``raw_redis`` and ``raw_sqlite`` are not peers but floors: a bare job loop on each store.
"""
