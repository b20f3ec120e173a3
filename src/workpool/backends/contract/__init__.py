"""The Backend contract: every state transition of a run, each one atomic, by concern.

These modules are the specification every backend implements (``backends/base.py``
composes their protocols into ``Backend``); the conformance suite in
``tests/conformance`` is its executable form. A backend is the only code that knows
keys, tables, scripts and SQL. It never imports user code or the serializer: inputs,
outputs, errors, retry policies and hook contexts reach it as JSON text, which it
stores and returns unchanged (it only composes the JSON input of completion hooks).

Atomicity: each method is ONE atomic operation (one Lua script call on Redis, one
``BEGIN IMMEDIATE`` transaction on SQLite, one transaction on PostgreSQL), unless its
docstring says it is a batch of independent atomic operations. No method reads, then
writes in a later round trip.

Time: every time-dependent method takes ``now`` (seconds since the epoch, float) from
the caller's clock; backends never read the wall clock for run state, so tests drive
leases and schedules with a manual clock. Every time a write would store (``now``,
``available_at``, ``retry_at``, ``wake_at``, a step's times, a key's expiry) must be
storable (``workpool.validation.storable_time``: finite, in years 1 to 9999):
``enqueue``, ``finish`` and ``save_step`` check every entry before their first write
and raise ValueError, naming the run and field, writing nothing (``backends/checks.py``).

Run states::

    scheduled --(available_at <= now, promoted by claim)--> queued
    queued --claim--> running
    running --finish(retry)--> scheduled (or queued if retry_at <= now)
    running --lease expired, reaped by claim--> queued   (or failed / canceled, see claim)
    running --release--> queued
    running --finish--> succeeded | failed | canceled    (terminal, final)
    running --finish(suspend)--> suspended (waits on children, events and/or a timer)
    suspended --(an awaited child ends | an awaited event is sent
                 | wake_at <= now, promoted by claim)--> queued
    running --finish(attention)--> needs_attention (not terminal; holds no gate place)
    needs_attention --rerun_from_step--> queued
    failed | canceled --rerun_from_step--> queued   (the one way out of a terminal state)
    queued | scheduled --act_on_run(pause)--> paused (not terminal; holds no gate place)
    paused --act_on_run(resume)--> queued (or scheduled, at its kept available_at)
    scheduled --act_on_run(run_now)--> queued
    queued | scheduled | suspended | needs_attention | paused --cancel--> canceled

Terminal transitions fire the run's completion hooks (see ``CompletionHook``) in the
same atomic operation, exactly once per ending. A run that ends ``canceled`` cancels, in the same
operation, every unfinished child it awaits (children stored with a ``parent_step``),
and so on down. A child that ends records its outcome in its parent's step and, if the
parent is ``suspended``, queues the parent again, in the same operation.

Read one concern at a time. Each module holds the values its operations take and
return, then its protocol, with the contract of each operation in its docstring:

- ``runs.py``      a run to store, and a run as stored (values only)
- ``enqueue.py``   ``enqueue``; claim order, concurrency gates, rate limits, debounce
- ``leases.py``    ``claim``, ``renew``, ``finish``, ``release``, ``wait_for_work``
- ``steps.py``     the steps, children and events of a running run
- ``batches.py``   batches of runs and their callback
- ``control.py``   an operator's actions: cancel, rerun, queue settings, purge
- ``recovery.py``  bulk actions by filter, in pages; failures grouped by error type
- ``reads.py``     ``get_run``, listing, stats and per-minute counters
- ``workers.py``   the registry, worker heartbeats, named leases (the cron leader)
- ``ticks.py``     cron ticks and their overlap policies

Import any of their names from ``workpool.backends.base``.
"""
