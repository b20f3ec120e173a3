"""The body of every backend operation, run inside one transaction on the connection's thread.

An ``Operations`` object lives for one transaction. Besides each operation's result it
collects ``woken``: the queues that received runnable work (new runs, hook runs), so
the backend can wake its own ``wait_for_work`` callers after the commit.

Its parts, each a class over the shared transaction, from the bottom up:

- ``transaction.py``  connection, named queries, ``woken``, counters, queue settings
- ``admission.py``    concurrency gates and rate-limit reservations
- ``checking.py``     finding corrupt rows among the runs an operation will change
- ``enqueueing.py``   ``enqueue`` (and storing a step's child)
- ``ticks.py``        ``start_tick``: a cron tick's run, or a skipped tick's record
- ``ending.py``       terminal transitions with hooks, requeues, ``cancel``, ``cancel_many``
- ``claiming.py``     ``claim``: promote, reap, lease
- ``finishing.py``    ``renew``, ``finish``, ``release``
- ``steps.py``        ``save_step``
- ``events.py``       ``send_event``, ``take_event``, ``set_event``
- ``admin.py``        queue settings, registry, workers, named leases, ``fail_unserved``,
  ``purge``, ``rerun``
- ``recovery.py``     ``act_on_runs``: bulk actions by filter, a page per transaction
"""

from __future__ import annotations

from workpool.backends.sqlite.operations.claiming import Claiming
from workpool.backends.sqlite.operations.events import Events
from workpool.backends.sqlite.operations.finishing import Finishing
from workpool.backends.sqlite.operations.recovery import Recovery
from workpool.backends.sqlite.operations.steps import Steps
from workpool.backends.sqlite.operations.ticks import Ticks

__all__ = ["Operations"]


class Operations(Claiming, Finishing, Events, Steps, Ticks, Recovery):
    """Every state transition, as statements on one connection inside one transaction."""
