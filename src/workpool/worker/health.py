"""BackendHealth: one worker's view of whether its backend answers, logged once.

The worker's side tasks (claimer, renewer, finisher, housekeeper, cron, metrics
watcher) report the failures and successes of their backend calls to the
worker's single ``BackendHealth``. An outage (``BackendUnavailableError``: the backend
cannot be reached) is logged as one ERROR when it starts, a one-line WARNING at most
every ``remind_every`` seconds while it lasts, and one WARNING with its length when a
call succeeds again; the side tasks keep retrying in silence. Any other exception is
a bug (the backend answered): its traceback is logged once per distinct error, not
at every retry.

``report_set_aside`` logs each run a claim set aside because its stored record is
corrupt, as the claim reports it: once per run.

``warn_about_settings`` logs, once at start, what a backend says of its store's
durability settings (``workpool.backends.durability``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from workpool.backends.base import Backend, SetAside
from workpool.backends.durability import ChecksDurability
from workpool.errors import BackendUnavailableError

logger = logging.getLogger("workpool.worker")

REMIND_EVERY = 60.0
"""Seconds between two reminders that an outage goes on."""

KNOWN_BUGS_KEPT = 100
"""Distinct errors remembered (the oldest is forgotten first, and logged again if seen)."""


class BackendHealth:
    """Tracks outages of one worker's backend from what its side tasks report.

    ``clock`` gives seconds (monotonic by default; a manual clock in tests).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        remind_every: float = REMIND_EVERY,
    ) -> None:
        self._clock = clock
        self._remind_every = remind_every
        self._outage_since: float | None = None
        self._reminded_at = 0.0
        self._failed_calls = 0
        self._known_bugs: dict[tuple[str, str, str], None] = {}

    @property
    def reachable(self) -> bool:
        """False from a call that could not reach the backend until one that did."""
        return self._outage_since is None

    def failed(self, task: str, error: BaseException) -> None:
        """A backend call of side task ``task`` raised ``error``; the task retries."""
        if not isinstance(error, BackendUnavailableError):
            self._bug(task, error)
            return
        now = self._clock()
        if self._outage_since is None:
            self._outage_since = self._reminded_at = now
            self._failed_calls = 1
            logger.error(
                "backend unreachable (%s: %s); the worker retries until it answers",
                task,
                error,
                extra={"event": "backend_unreachable"},
            )
            return
        self._failed_calls += 1
        if now - self._reminded_at >= self._remind_every:
            self._reminded_at = now
            logger.warning(
                "backend still unreachable after %.0f s (%d failed calls; last, %s: %s)",
                now - self._outage_since,
                self._failed_calls,
                task,
                error,
                extra={"event": "backend_still_unreachable"},
            )

    def succeeded(self) -> None:
        """A backend call succeeded: ends the outage, if there was one."""
        if self._outage_since is None:
            return
        duration = round(self._clock() - self._outage_since, 3)
        self._outage_since = None
        logger.warning(
            "backend reachable again after %s s (%d calls failed meanwhile)",
            f"{duration:g}",
            self._failed_calls,
            extra={"event": "backend_reachable", "duration": duration},
        )

    def _bug(self, task: str, error: BaseException) -> None:
        key = (task, type(error).__qualname__, str(error))
        if key in self._known_bugs:
            return
        if len(self._known_bugs) >= KNOWN_BUGS_KEPT:
            del self._known_bugs[next(iter(self._known_bugs))]
        self._known_bugs[key] = None
        logger.error(
            "%s: backend call failed with %s: %s; retrying (this error is logged once)",
            task,
            type(error).__name__,
            error,
            exc_info=error,
            extra={"event": "backend_error"},
        )


async def warn_about_settings(backend: Backend) -> None:
    """Log what a backend that can check its store's durability finds (once, at start):
    a WARNING per setting that can lose runs, an INFO per setting it could not read."""
    if not isinstance(backend, ChecksDurability):
        return
    report = await backend.check_durability()
    for warning in report.warnings:
        logger.warning("%s", warning, extra={"event": "backend_settings"})
    for setting in report.unreadable:
        logger.info("could not check %s", setting)


def report_set_aside(runs: Sequence[SetAside]) -> None:
    """Log each run a claim reported set aside as corrupt (each is reported once)."""
    for run in runs:
        logger.error(
            "run %s set aside: its stored record is corrupt (%s); it will not be claimed, "
            "the other runs go on. Inspect it with `workpool runs show %s`, then repair or "
            "delete it by hand",
            run.run_id,
            run.problem,
            run.run_id,
        )
