"""The restart policy of the process supervisor, and how it names an exit."""

from __future__ import annotations

import signal

from workpool.worker.supervisor import RestartPolicy, describe_exit


def test_the_delay_doubles_from_one_second_to_thirty() -> None:
    policy = RestartPolicy()
    assert [policy.delay(deaths) for deaths in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


def test_an_exit_is_named_by_its_status_or_its_signal() -> None:
    assert describe_exit(2) == "exited with status 2"
    assert describe_exit(-signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_exit(-200) == "was killed by signal 200"
