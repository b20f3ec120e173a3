"""The body of every backend operation, run inside one transaction on one connection.

The same parts as the SQLite backend's operations (``backends/sqlite/operations``), as
coroutines over psycopg's async connection, with row locks where SQLite had its single
writer. An ``Operations`` object lives for one transaction and collects ``woken``: the
queues that received runnable work, notified (``NOTIFY``) after the commit.

- ``transaction.py``  connection, named queries, ``woken``, counters, queue settings
- ``admission.py``    concurrency gates and rate-limit reservations (locked rows)
- ``batches.py``      batches and hook runs
- ``checking.py``     finding corrupt rows among the runs an operation will change
- ``enqueueing.py``   ``enqueue`` (and storing a step's child)
- ``ticks.py``        ``start_tick``: a cron tick's run, or a skipped tick's record
- ``ending.py``       terminal transitions with hooks, requeues, ``cancel``, ``cancel_many``
- ``claiming.py``     ``claim``: promote, reap, lease (``FOR UPDATE SKIP LOCKED``)
- ``finishing.py``    ``renew``, ``finish``, ``release``
- ``steps.py``        ``save_step``
- ``events.py``       ``send_event``, ``take_event``, ``set_event``
- ``admin.py``        queue settings, registry, workers, named leases, ``fail_unserved``,
  ``purge``, ``rerun``, ``cancel_batch``
- ``recovery.py``     ``act_on_runs``: bulk actions by filter, a page per transaction
"""

from __future__ import annotations

from workpool.backends.postgres.operations.claiming import Claiming
from workpool.backends.postgres.operations.events import Events
from workpool.backends.postgres.operations.finishing import Finishing
from workpool.backends.postgres.operations.recovery import Recovery
from workpool.backends.postgres.operations.ticks import Ticks

__all__ = ["Operations"]


class Operations(Claiming, Finishing, Events, Ticks, Recovery):
    """Every state transition, as statements on one connection inside one transaction."""
