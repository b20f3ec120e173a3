"""Every Redis key name of a workpool deployment, built from its prefix.

All keys start with the hash tag ``{<prefix>}``, so a Redis Cluster keeps them in one
slot and a Lua script may touch any of them. The Lua library ``lua/library/keys.lua``
builds the same names from that tag (passed as ``KEYS[1]``)::

    {p}:run:<run id>                       hash: one run, fields named as in RunRecord
                                           (retry_of, retried_as: absent when None),
                                           plus lease_token (the current lease's; '' or
                                           absent when not running), hooks (JSON text), claims
                                           (claims so far, makes lease tokens unique;
                                           the fencing token), isolate ('1': it lost its
                                           lease and runs alone next),
                                           has_steps ('1' once a step was saved),
                                           awaited_events (the event keys of its latest
                                           suspension, a JSON array, '' for none),
                                           inbox ('1' once it was sent an event),
                                           parent_step (the parent's step awaiting it),
                                           and for a gated run: gate (its gate id),
                                           gate_limit (its max_concurrency) and
                                           admitted ('1' while it holds a place), and
                                           under several gates (shared limits): gate_list
                                           (JSON [[gate, limit], ...] in id order; gate
                                           is then the one it waits at); for a
                                           run with rate limits: rate (JSON text of
                                           [[limiter id, count, per], ...]) and
                                           rate_reserved ('1' while it is scheduled at a
                                           start it reserved, not yet used); batch (its
                                           batch id), debounce_until (a debounced run's
                                           latest start), when it has them
    {p}:run:<run id>:steps                 hash: step name -> JSON text of the step
                                           (kind, status, attempts, output, error,
                                           child_run_id; times as decimal strings)
    {p}:run:<run id>:children              list: ids of the runs its steps started,
                                           in creation order
    {p}:run:<run id>:inbox:<key>           list: payloads (JSON texts) of the events of
                                           <key> sent to the run and not yet taken,
                                           oldest first (gone when empty)
    {p}:run:<run id>:inbox                 set: every <key> the run was sent events of
                                           (the run's hash has inbox '1' once it has one)
    {p}:run:<run id>:published             hash: key -> the value (JSON text) the run
                                           published under it, the last one
    {p}:run:<run id>:event_ids             set: the event ids (send_event's event_id)
                                           the run was sent; only with an id (the
                                           hash's inbox is '1' by then)
    {p}:corrupt                            hash: run id -> what is wrong with its record,
                                           for each run set aside as corrupt (out of
                                           every index; lua/library/checks.lua)
    {p}:corrupt:unreported                 list: the ids of those no claim reported yet
    {p}:ready:<pair>                       sorted set: the pair's claimable run ids
                                           (queued: ungated, or admitted by their gate),
                                           score the run's rank, or rank - 3e12 for a run
                                           to isolate (field isolate = '1'; see
                                           lua/library/ready.lua)
    {p}:queue:<queue>:heads                sorted set: workflow -> the lowest score of
                                           its ready set in this queue (none when empty)
    {p}:signal:<pair>                      list (at most one token): wakes an idle worker
                                           serving the pair
    {p}:queue:<queue>:scheduled            sorted set: scheduled run ids, score available_at,
                                           and suspended runs with a timer, score wake_at
                                           (their available_at)
    {p}:queue:<queue>:leases               sorted set: running run ids, score lease expiry
    {p}:queue:<queue>:deadlines            sorted set: active runs with a deadline, score
                                           the deadline (a running one's: its lease
                                           expiry, once due; lua/library/deadlines.lua)
    {p}:queue:<queue>:settings             hash: max_parallelism (a whole number; absent:
                                           no limit) and paused ('1' or '0', always
                                           written); no hash: the queue has no settings
                                           (no limit, not paused)
    {p}:workflow:<workflow>:cancelable     sorted set: the workflow's non-terminal runs
                                           without a cancel request, score created_at
    {p}:registry                           hash: workflow name -> JSON of its registered
                                           definition (app, queue, max_concurrency, retry,
                                           cron, updated_at as a decimal string)
    {p}:workflows                          set: workflow names, written by versions before
                                           the pairs set named every workflow; no longer
                                           written, read by cancel_many (its runs' cancelable
                                           sets)
    {p}:idempotency:<len>:<workflow>:<key> string "<expires_at> <run id>", with a TTL;
                                           <len> is the workflow name's length in bytes
    {p}:debounce:<len>:<workflow>:<key>    string: the id of the run last enqueued with
                                           that debounce key, with a TTL of a day past
                                           its start (lua/library/debouncing.lua)
    {p}:batch:<batch id>                   hash: created_at, total, succeeded, failed,
                                           canceled (counts), open ('1' | '0'),
                                           callback (JSON of its hook, if any),
                                           completed_at and callback_run_id (once
                                           complete); its runs have the field batch
    {p}:batch:<batch id>:failed            list: its first 1,000 failed run ids, in order
    {p}:batch:<batch id>:cancelable        sorted set, every score 0: its unfinished runs
                                           without a cancel request, by id
    {p}:batches:completed                  sorted set: completed batch ids, score
                                           completed_at (purge takes the oldest)
    {p}:triggers:runs                      hash: <trigger> -> the id of the run that
                                           start_tick last created for the cron trigger
                                           (its overlap policy judges that run)
    {p}:trigger:<trigger>:skipped          list: the trigger's skipped ticks, newest
                                           first, JSON texts {workflow, trigger,
                                           scheduled_at, reason, run_id, recorded_at}
                                           (times as decimal strings), trimmed to the
                                           newest SKIPPED_TICKS_KEPT
    {p}:triggers:skipped                   sorted set: every <trigger> with a skipped
                                           ticks list, score the time of its last skip
    {p}:lease:<name>                       string "<expires_at> <holder>" of a named lease
                                           (acquire_lease), with a TTL of its length
    {p}:gate:<gate id>:waiting             sorted set: the gate's queued runs that wait
                                           for a place (not claimable), score available_at
    {p}:gates                              hash: gate id -> how many of its runs are
                                           admitted (queued and ready, or running); the
                                           field is deleted when it drops to 0
    {p}:limiter:<limiter id>               string: the limiter's TAT (theoretical arrival
                                           time, decimal seconds of the caller's clock;
                                           see lua/library/rates.lua), with a TTL a little
                                           over how long it matters (an idle limiter's
                                           key vanishes: absent means no start recorded)
    {p}:list:<status>:<pair>               sorted set, every score 0: the pair's runs in
                                           that status (each run is in exactly one), so
                                           ZREVRANGEBYLEX pages by id, newest first
    {p}:pairs                              set: every <pair> that has had a run
    {p}:workers                            hash: worker id -> JSON of its record (id, app,
                                           queues, workflows, started_at, seen_at,
                                           expires_at; decimal strings)
    {p}:workers:expiry                     sorted set: worker ids, score expires_at
    {p}:finished                           sorted set: terminal runs, score finished_at
                                           (purge takes the oldest)
    {p}:stats:<minute>                     hash: the counters of the minute starting at
                                           <minute> (floor(now / 60) * 60, a whole number
                                           of seconds), field "<counter>:<pair>" for
                                           timed, reaped, run_time (seconds, a decimal),
                                           succeeded, failed, canceled and retried (see
                                           PairCounters; executions = timed + reaped),
                                           with a TTL of 25 hours from its first write
    {p}:stats                              sorted set: the minute of every stats hash,
                                           each scored by itself (get_stats,
                                           get_counters and purge range over it; only
                                           purge takes minutes out, with their hashes;
                                           a minute whose hash expired stays until then)
    {p}:hourly:<hour>                      hash: the counters of the hour starting at
                                           <hour> (floor(now / 3600) * 3600), the
                                           fields of a stats hash, with a TTL of 8 days
                                           from its first write
    {p}:hourly                             sorted set: the hour of every hourly hash,
                                           likewise

A gate id is ``<len>:<workflow>`` for runs without a concurrency key and
``<len>:<workflow>:<key>`` with one (``<len>`` as above), so no two (workflow, key)
pairs share a gate, whatever ':' their names hold. A queued gated run is in exactly one
of its pair's ready set (admitted) or its gate's waiting set. A <pair> names a
(queue, workflow) as ``<len>:<queue>:<workflow>``, ``<len>`` the queue name's length
in bytes, for the same reason. A <trigger> names a cron trigger of a workflow as
``<len>:<workflow>:<trigger id>``, ``<len>`` the workflow name's length in bytes.

Idempotency keys and named leases keep their expiry as a decimal time of the caller's
clock, which alone decides whether they still hold; their real TTL (the same length,
counted from the write) only lets Redis garbage-collect them.
"""

from __future__ import annotations

from dataclasses import dataclass

from workpool.errors import ConfigurationError


def check_prefix(prefix: str) -> None:
    """Raise ConfigurationError unless ``prefix`` can serve as a hash tag."""
    if not prefix or "{" in prefix or "}" in prefix:
        raise ConfigurationError(
            f"invalid Redis key prefix {prefix!r}: use a non-empty name without braces"
        )


@dataclass(frozen=True, slots=True)
class Keys:
    """Key names under one prefix."""

    prefix: str

    @property
    def tag(self) -> str:
        """The hash tag every key starts with; passed to each script as ``KEYS[1]``."""
        return "{" + self.prefix + "}"

    def run(self, run_id: str) -> str:
        return f"{self.tag}:run:{run_id}"

    def batch(self, batch_id: str) -> str:
        return f"{self.tag}:batch:{batch_id}"

    def steps(self, run_id: str) -> str:
        return f"{self.tag}:run:{run_id}:steps"

    def children(self, run_id: str) -> str:
        return f"{self.tag}:run:{run_id}:children"

    def inbox(self, run_id: str, key: str) -> str:
        return f"{self.tag}:run:{run_id}:inbox:{key}"

    def inbox_keys(self, run_id: str) -> str:
        return f"{self.tag}:run:{run_id}:inbox"

    def published(self, run_id: str) -> str:
        return f"{self.tag}:run:{run_id}:published"

    def ready(self, queue: str, workflow: str) -> str:
        return f"{self.tag}:ready:{pair(queue, workflow)}"

    def heads(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:heads"

    def scheduled(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:scheduled"

    def leases(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:leases"

    def signal(self, queue: str, workflow: str) -> str:
        return f"{self.tag}:signal:{pair(queue, workflow)}"

    def workers(self) -> str:
        return f"{self.tag}:workers"

    def settings(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:settings"

    def registry(self) -> str:
        return f"{self.tag}:registry"

    def legacy_workflows(self) -> str:
        return f"{self.tag}:workflows"

    def workflow_cancelable(self, workflow: str) -> str:
        return f"{self.tag}:workflow:{workflow}:cancelable"

    def idempotency(self, workflow: str, key: str) -> str:
        length = len(workflow.encode())
        return f"{self.tag}:idempotency:{length}:{workflow}:{key}"

    def trigger_runs(self) -> str:
        return f"{self.tag}:triggers:runs"

    def skipped_ticks(self, workflow: str, trigger_id: str) -> str:
        return f"{self.tag}:trigger:{trigger_name(workflow, trigger_id)}:skipped"

    def skipped_triggers(self) -> str:
        return f"{self.tag}:triggers:skipped"

    def lease(self, name: str) -> str:
        return f"{self.tag}:lease:{name}"

    def gate_waiting(self, gate: str) -> str:
        return f"{self.tag}:gate:{gate}:waiting"

    def gates(self) -> str:
        return f"{self.tag}:gates"

    def limiter(self, limiter_id: str) -> str:
        return f"{self.tag}:limiter:{limiter_id}"

    def listing(self, status: str, queue: str, workflow: str) -> str:
        return f"{self.tag}:list:{status}:{pair(queue, workflow)}"

    def pairs(self) -> str:
        return f"{self.tag}:pairs"

    def finished(self) -> str:
        return f"{self.tag}:finished"

    def failures(self) -> str:
        return f"{self.tag}:failures"

    def stats(self, minute: int) -> str:
        return f"{self.tag}:stats:{minute}"

    def stats_minutes(self) -> str:
        return f"{self.tag}:stats"


def pair(queue: str, workflow: str) -> str:
    """The name of a (queue, workflow) pair in keys and counter fields."""
    return f"{len(queue.encode())}:{queue}:{workflow}"


def split_pair(name: str) -> tuple[str, str]:
    """(queue, workflow) from a pair's name, or ValueError if it is not one."""
    length, _, rest = name.partition(":")
    encoded = rest.encode()
    if not length.isdecimal() or encoded[int(length) : int(length) + 1] != b":":
        raise ValueError(f"not a (queue, workflow) pair: {name!r}")
    size = int(length)
    return encoded[:size].decode(), encoded[size + 1 :].decode()


def trigger_name(workflow: str, trigger_id: str) -> str:
    """The name of a cron trigger in keys and fields, as the scripts build it."""
    return f"{len(workflow.encode())}:{workflow}:{trigger_id}"


def gate_id(workflow: str, concurrency_key: str | None) -> str:
    """The id of the gate of (workflow, concurrency_key), as the scripts build it."""
    return f"{len(workflow.encode())}:{workflow}{gate_suffix(concurrency_key)}"


def gate_suffix(concurrency_key: str | None) -> str:
    """How a concurrency key travels to the scripts: '' for none, else ':' + key (so an
    empty key stays distinct from none); it is the end of the gate id."""
    return "" if concurrency_key is None else ":" + concurrency_key
