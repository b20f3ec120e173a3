"""Translation between the protocol's values and what the scripts read and return.

Times cross as decimal strings (``repr`` of a float) so nothing rounds them; JSON
texts (inputs, outputs, errors, retry policies, hook contexts) pass through unchanged.
One module per area, every name re-exported here (callers write ``codec.encode_runs``):

- ``times.py``     ``seconds``, ``milliseconds``
- ``runs.py``      new runs, finish batches, leases, claimed rows, run and batch hashes
- ``stats.py``     ``get_stats.lua``'s and ``get_counters.lua``'s replies, worker records
- ``steps.py``     stored steps
- ``settings.py``  queue settings, workflow registry records
- ``ticks.py``     ``start_tick.lua``'s reply, skipped ticks
"""

from __future__ import annotations

from workpool.backends.redis.codec.runs import (
    RUN_FIELDS,
    decode_batch,
    decode_claimed,
    decode_run,
    decode_set_aside,
    encode_finishes,
    encode_hook,
    encode_rate_limits,
    encode_runs,
    gate_fields,
    lease_pairs,
    optional_argument,
    renewals,
    set_aside_error,
)
from workpool.backends.redis.codec.settings import (
    decode_settings,
    decode_workflow,
    encode_queue_change,
    encode_registry,
    encode_workflow,
)
from workpool.backends.redis.codec.stats import (
    COUNTER_NAMES,
    decode_period_counters,
    decode_stats,
    encode_worker,
    live_workers,
)
from workpool.backends.redis.codec.steps import (
    STEP_KINDS,
    STEP_STATUSES,
    decode_step,
    decode_steps,
    encode_step,
)
from workpool.backends.redis.codec.ticks import decode_skipped_ticks, decode_tick_started
from workpool.backends.redis.codec.times import milliseconds, seconds

__all__ = [
    "decode_tick_started",
    "decode_skipped_ticks",
    "seconds",
    "milliseconds",
    "RUN_FIELDS",
    "decode_set_aside",
    "set_aside_error",
    "encode_runs",
    "encode_rate_limits",
    "gate_fields",
    "encode_finishes",
    "lease_pairs",
    "renewals",
    "decode_claimed",
    "decode_run",
    "encode_hook",
    "decode_batch",
    "optional_argument",
    "COUNTER_NAMES",
    "decode_period_counters",
    "decode_stats",
    "encode_worker",
    "live_workers",
    "STEP_KINDS",
    "STEP_STATUSES",
    "encode_step",
    "decode_step",
    "decode_steps",
    "encode_queue_change",
    "decode_settings",
    "encode_registry",
    "encode_workflow",
    "decode_workflow",
]
