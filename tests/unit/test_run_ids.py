"""Run ids: 32 hex digits, beginning with the creation time, in creation order per process."""

from __future__ import annotations

import os
import re
import threading

import pytest

from workpool.client import new_run_id
from workpool.run_ids import RunIds

NOW = 1_800_000_000.0


def time_of(run_id: str) -> int:
    """The milliseconds an id begins with."""
    return int(run_id[:12], 16)


def test_an_id_is_32_hex_digits_beginning_with_the_time_in_milliseconds() -> None:
    run_id = new_run_id(NOW + 5.0)
    assert re.fullmatch(r"[0-9a-f]{32}", run_id)
    assert time_of(run_id) >= int((NOW + 5.0) * 1000)


def test_ids_made_in_one_millisecond_keep_their_creation_order() -> None:
    ids = [new_run_id(NOW + 10.0) for _ in range(10_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert {time_of(run_id) for run_id in ids} == {int((NOW + 10.0) * 1000)}


def test_ids_never_go_backwards_when_the_clock_steps_back() -> None:
    ids = RunIds()
    first = ids.new(NOW + 20.0)
    after_the_step_back = [ids.new(NOW + 19.0) for _ in range(100)]
    assert [first, *after_the_step_back] == sorted([first, *after_the_step_back])
    assert all(time_of(run_id) == time_of(first) for run_id in after_the_step_back)
    later = ids.new(NOW + 21.0)  # the clock caught up: ids carry its time again
    assert later > after_the_step_back[-1]
    assert time_of(later) == int((NOW + 21.0) * 1000)


def test_ids_keep_enough_randomness_to_differ_between_processes() -> None:
    """Two generators in one millisecond (two processes) start at random points."""
    read, write = os.pipe()
    moment = NOW + 30.0
    new_run_id(moment)  # the parent's state, inherited by the child
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child writes its ids and leaves at once
        os.close(read)
        os.write(write, ",".join(new_run_id(moment) for _ in range(100)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child_ids = set(pipe.read().split(","))
    os.waitpid(pid, 0)
    parent_ids = {new_run_id(moment) for _ in range(100)}
    assert len(child_ids) == 100
    assert not child_ids & parent_ids


def test_ids_made_by_many_threads_are_unique_and_ordered_per_thread() -> None:
    made: dict[int, list[str]] = {}

    def make(index: int) -> None:
        made[index] = [new_run_id(NOW + 40.0) for _ in range(2000)]

    threads = [threading.Thread(target=make, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [run_id for ids in made.values() for run_id in ids]
    assert len(set(every)) == len(every)
    assert all(ids == sorted(ids) for ids in made.values())


@pytest.mark.parametrize("moment", [0.0, 253402214400.0])  # the epoch, the last storable day
def test_ids_at_the_ends_of_the_time_range_are_32_hex_digits(moment: float) -> None:
    ids = RunIds()
    made = [ids.new(moment) for _ in range(1000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", run_id) for run_id in made)
    assert made == sorted(made)
    assert time_of(made[0]) == int(moment * 1000)
