"""RunHandle: a reference to one run, over what it needs of the client (``RunSource``)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Generic, Protocol, TypeVar

from pydantic import TypeAdapter

from workpool.backends.base import Backend, CancelResult
from workpool.decoding import require_run, status_of
from workpool.errors import ResultTimeoutError, RunCanceledError, WorkpoolError, failed_error
from workpool.models import Run, RunStatus
from workpool.sync import Portal, call_sync
from workpool.validation import duration_seconds

OutputT = TypeVar("OutputT")
EXPLAIN_TIMEOUT = 1.0
"""Seconds ``result`` may spend, once its timeout passed, reading why the run waits."""


class RunSource(Protocol):
    """What a handle needs of the client that made it."""

    @property
    def portal(self) -> Portal:
        """The event loop of the ``*_sync`` methods."""
        ...

    async def backend(self) -> Backend:
        """The running event loop's backend."""
        ...

    async def cancel(
        self, run_id: str, reason: str | None = None, *, connection: object = None
    ) -> CancelResult:
        """Cancel a run (``Workpool.cancel``)."""
        ...

    async def send_event(
        self,
        run_id: str,
        key: str,
        payload: Any,
        *,
        event_id: str | None = None,
        connection: object = None,
    ) -> bool:
        """Send an event to a run (``Workpool.send_event``)."""
        ...

    async def get_event(
        self, run_id: str, key: str, timeout: timedelta | float | None = None
    ) -> Any:
        """A value a run published, waiting for it (``Workpool.get_event``)."""
        ...

    async def waiting_reason(self, run: Run) -> str | None:
        """Why a pending run has not started (``Workpool.waiting_reason``)."""
        ...


class RunHandle(Generic[OutputT]):
    """A reference to one run: read its status, wait for its result, cancel it, send it
    events and read the values it publishes."""

    def __init__(
        self, client: RunSource, run_id: str, output_adapter: TypeAdapter[Any] | None = None
    ) -> None:
        self.client = client
        self.id = run_id
        self._output_adapter = output_adapter

    def __repr__(self) -> str:
        return f"<RunHandle {self.id}>"

    async def status(self) -> RunStatus:
        """``Pending``, ``Running`` or ``Finished`` (with the result)."""
        return status_of(await self._read())

    async def result(self, timeout: timedelta | float | None = None) -> OutputT:
        """Wait for the run to finish and return its output.

        Raises RunFailedError or RunCanceledError when it did not succeed, and
        ResultTimeoutError (a TimeoutError) when ``timeout`` (a timedelta or seconds;
        None: no limit) passes first: the run itself goes on, and the message says what
        it is doing, and why it waits if it has not started (``waiting_reason``).
        """
        seconds = None
        if timeout is not None:
            seconds = duration_seconds(timeout, what="result() timeout", positive=True)
        try:
            async with asyncio.timeout(seconds):
                run = await self._wait_finished()
        except TimeoutError:
            run = await self._timed_out(seconds)
        if run.status == "failed":
            raise failed_error(self.id, run.error)
        if run.status == "canceled":
            raise RunCanceledError(self.id, run.cancel_reason)
        if self._output_adapter is not None:
            return self._output_adapter.validate_python(run.output)  # type: ignore[no-any-return]
        return run.output  # type: ignore[no-any-return]

    async def cancel(self, reason: str | None = None, *, connection: object = None) -> None:
        """Cancel the run (see ``Workpool.cancel``; ``connection=``: in your transaction)."""
        await self.client.cancel(self.id, reason, connection=connection)

    async def progress(self) -> Any:
        """The latest progress its handler reported (``ctx.set_progress``), or None."""
        return (await self._read()).progress

    async def send_event(
        self, key: str, payload: Any, *, event_id: str | None = None, connection: object = None
    ) -> bool:
        """Send the run an event; False if one of ``event_id`` was sent before (see
        ``Workpool.send_event``; ``connection=``: in your transaction)."""
        return await self.client.send_event(
            self.id, key, payload, event_id=event_id, connection=connection
        )

    async def get_event(self, key: str, timeout: timedelta | float | None = None) -> Any:
        """The value the run published under ``key``, waiting for it while the run is
        active; None if it ended without one or ``timeout`` passed (see
        ``Workpool.get_event``)."""
        return await self.client.get_event(self.id, key, timeout)

    # Written out, not made by ``sync_twin``: a generic class's attribute that mentions
    # OutputT cannot be read on the class under mypy (``RunHandle.result_sync``).

    def status_sync(self) -> RunStatus:
        """``status`` for synchronous code."""
        return self.client.portal.call(self.status(), "handle.status")

    def result_sync(self, timeout: timedelta | float | None = None) -> OutputT:
        """``result`` for synchronous code."""
        return self.client.portal.call(self.result(timeout), "handle.result")

    def cancel_sync(self, reason: str | None = None, *, connection: object = None) -> None:
        """``cancel`` for synchronous code."""
        canceling = self.cancel(reason, connection=connection)
        call_sync(self.client.portal, canceling, "handle.cancel", connection)

    def progress_sync(self) -> Any:
        """``progress`` for synchronous code."""
        return self.client.portal.call(self.progress(), "handle.progress")

    def send_event_sync(
        self, key: str, payload: Any, *, event_id: str | None = None, connection: object = None
    ) -> bool:
        """``send_event`` for synchronous code."""
        sending = self.send_event(key, payload, event_id=event_id, connection=connection)
        return call_sync(self.client.portal, sending, "handle.send_event", connection)

    def get_event_sync(self, key: str, timeout: timedelta | float | None = None) -> Any:
        """``get_event`` for synchronous code."""
        return self.client.portal.call(self.get_event(key, timeout), "handle.get_event")

    async def _read(self) -> Run:
        """The run without its children: one backend read."""
        backend = await self.client.backend()
        return require_run(await backend.get_run(self.id), self.id)

    async def _timed_out(self, seconds: float | None) -> Run:
        """The run if it finished just as the wait ended; else ResultTimeoutError, saying
        what the run does (one more read, at most ``EXPLAIN_TIMEOUT`` s: a backend too
        slow to say leaves the reason out)."""
        said = "did not finish within"
        try:
            async with asyncio.timeout(EXPLAIN_TIMEOUT):
                run = await self._read()
                if run.finished:
                    return run
                waiting = await self.client.waiting_reason(run)
        except (TimeoutError, WorkpoolError):
            raise ResultTimeoutError(
                f"run {self.id} {said} {seconds} s; it keeps going, call result() again "
                "to wait longer",
                self.id,
                None,
            ) from None
        raise ResultTimeoutError(
            f"run {self.id} {said} {seconds} s: it is {_doing(run, waiting)}; it keeps "
            "going, call result() again to wait longer",
            self.id,
            waiting,
        )

    async def _wait_finished(self) -> Run:
        delay = 0.005
        while True:
            run = await self._read()
            if run.finished:
                return run
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)


def _doing(run: Run, waiting: str | None) -> str:
    """What an unfinished run is doing, for a timeout's message."""
    if run.status == "running":
        return f"running (attempt {run.attempts})"
    if run.status == "suspended":
        return "suspended (a durable step waits for a child, a timer or an event)"
    if run.status == "needs_attention":
        return "stopped in needs_attention (rerun it from a step or cancel it)"
    return run.status + (f", {waiting}" if waiting else "")
