"""The portal behind every ``*_sync`` method: callers drive its loop in turn.

A lone caller runs its coroutine on its own thread (no hand-off to another thread, so a
``*_sync`` call costs about what its ``await`` does); a caller that comes while another
drives is served by that driver, and takes over when the driver's call ends first.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from workpool.sync import Portal

DEADLINE = 10.0


@pytest.fixture
def portal() -> Iterator[Portal]:
    instance = Portal()
    yield instance
    instance.close()


async def thread_name() -> str:
    return threading.current_thread().name


async def until(flag: threading.Event) -> str:
    """Wait (on the loop) until ``flag`` is set; the name of the thread that saw it."""
    deadline = time.monotonic() + DEADLINE
    while not flag.is_set():
        assert time.monotonic() < deadline, "never set"
        await asyncio.sleep(0.005)
    return threading.current_thread().name


def in_thread(name: str, call: Callable[[], str], results: dict[str, str]) -> threading.Thread:
    def target() -> None:
        results[name] = call()

    thread = threading.Thread(target=target, name=name)
    thread.start()
    return thread


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {DEADLINE} s"
        time.sleep(0.005)


def test_a_lone_call_runs_on_the_callers_own_thread(portal: Portal) -> None:
    assert portal.call(thread_name(), "test") == threading.current_thread().name
    results: dict[str, str] = {}
    in_thread("other", lambda: portal.call(thread_name(), "test"), results).join()
    assert results == {"other": "other"}


def test_a_call_while_another_drives_is_served_without_waiting_for_it(portal: Portal) -> None:
    release = threading.Event()
    results: dict[str, str] = {}
    driver = in_thread("driver", lambda: portal.call(until(release), "test"), results)
    wait_for(lambda: _driven(portal), "the first call drives the loop")

    # Served by the driver's thread while the driver's own call still waits.
    assert portal.call(thread_name(), "test") == "driver"
    assert not results

    release.set()
    driver.join(DEADLINE)
    assert results == {"driver": "driver"}


def test_a_waiting_caller_drives_on_when_the_driver_is_done_first(portal: Portal) -> None:
    first_release, second_started, second_may_end = (threading.Event() for _ in range(3))
    results: dict[str, str] = {}

    async def second_call() -> str:
        second_started.set()  # on the first caller's thread, which drives the loop
        return await until(second_may_end)

    first = in_thread("first", lambda: portal.call(until(first_release), "test"), results)
    wait_for(lambda: _driven(portal), "the first call drives the loop")
    second = in_thread("second", lambda: portal.call(second_call(), "test"), results)
    wait_for(second_started.is_set, "the second call is served by the first caller's loop")

    first_release.set()
    first.join(DEADLINE)
    assert results == {"first": "first"}
    second_may_end.set()
    second.join(DEADLINE)
    assert results["second"] == "second"  # it took over the loop that served it


def test_errors_reach_their_caller_and_the_portal_goes_on(portal: Portal) -> None:
    async def fail() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        portal.call(fail(), "test")
    assert portal.call(thread_name(), "test") == threading.current_thread().name


def test_a_call_interrupted_while_it_drives_does_not_end_the_next_one(portal: Portal) -> None:
    """Ctrl-C while a caller drives leaves its coroutine on the loop; when a later call
    finishes it, the later call still runs to its own end."""
    released = threading.Event()

    def interrupt() -> None:
        raise KeyboardInterrupt

    async def interrupted() -> str:
        asyncio.get_running_loop().call_soon(interrupt)
        return await until(released)

    async def later() -> str:
        released.set()
        await asyncio.sleep(0.1)  # the interrupted call ends meanwhile
        return "later"

    with pytest.raises(KeyboardInterrupt):
        portal.call(interrupted(), "test")
    assert portal.call(later(), "test") == "later"


def test_many_threads_calling_at_once_all_get_their_own_result(portal: Portal) -> None:
    async def echo(value: int) -> int:
        await asyncio.sleep(0)
        return value

    failures: list[BaseException] = []

    def caller(first: int) -> None:
        try:
            for value in range(first, first + 50):
                assert portal.call(echo(value), "test") == value
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=caller, args=(n * 100,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert not failures
    assert not any(thread.is_alive() for thread in threads)


def test_close_cancels_a_call_in_flight_and_a_later_call_starts_afresh() -> None:
    portal = Portal()
    never = threading.Event()
    outcome: list[BaseException] = []

    def stuck() -> None:
        try:
            portal.call(until(never), "test")
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=stuck)
    thread.start()
    wait_for(lambda: _driven(portal), "the call drives the loop")
    portal.close()
    thread.join(DEADLINE)
    assert len(outcome) == 1
    assert isinstance(outcome[0], asyncio.CancelledError)
    assert portal.call(thread_name(), "test") == threading.current_thread().name
    portal.close()


async def test_close_from_a_running_loop_shuts_the_portal_down() -> None:
    portal = Portal()
    assert await asyncio.to_thread(portal.call, thread_name(), "test") != "MainThread"
    portal.close()  # an async test's teardown does this


def _driven(portal: Portal) -> bool:
    current = portal._current
    return current is not None and current.driven
