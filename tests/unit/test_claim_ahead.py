"""ClaimAhead: how many runs a worker holds ahead of its slots, and when it hands them back."""

from __future__ import annotations

from tests.unit.runs import claimed_run
from workpool.backends.base import ClaimedRun
from workpool.worker.ahead import ClaimAhead


def runs(count: int) -> list[ClaimedRun]:
    return [claimed_run(f"run-{index}") for index in range(count)]


def cycle(ahead: ClaimAhead, *, at: float, freed: int, round_trip: float, asked: int) -> None:
    """One claim sent at ``at`` after ``freed`` slots freed in all, full, emptied at once."""
    ahead.claim_sent(freed, at)
    ahead.claim_returned(at, asked, runs(asked), at + round_trip)
    while ahead.take() is not None:
        pass


def test_short_runs_are_held_ahead_up_to_the_limit() -> None:
    ahead = ClaimAhead(limit=40, lease_seconds=20)
    # 10 slots freed every 2 ms, claims take 1 ms: about 5 runs start per round trip.
    for index in range(5):
        cycle(ahead, at=index * 0.002, freed=index * 10, round_trip=0.001, asked=10)
    assert 10 <= ahead.wanted() <= 40

    fast = ClaimAhead(limit=15, lease_seconds=20)
    for index in range(5):
        cycle(fast, at=index * 0.002, freed=index * 100, round_trip=0.001, asked=10)
    assert fast.wanted() == 15


def test_long_runs_are_not_held_ahead() -> None:
    ahead = ClaimAhead(limit=40, lease_seconds=20)
    # One slot frees a second: no run would start within a round trip of 1 ms.
    for index in range(5):
        cycle(ahead, at=float(index), freed=index, round_trip=0.001, asked=1)
    assert ahead.wanted() == 0


def test_nothing_is_held_ahead_once_a_claim_comes_back_short() -> None:
    ahead = ClaimAhead(limit=40, lease_seconds=20)
    for index in range(5):
        cycle(ahead, at=index * 0.002, freed=index * 10, round_trip=0.001, asked=10)
    assert ahead.wanted() > 0
    ahead.claim_sent(50, 0.010)
    ahead.claim_returned(0.010, 10, runs(3), 0.011)  # the queue ran dry
    assert ahead.wanted() == 0


def test_held_runs_are_refilled_in_batches_and_handed_back_when_due() -> None:
    ahead = ClaimAhead(limit=40, lease_seconds=2)
    for index in range(5):
        cycle(ahead, at=index * 0.002, freed=index * 10, round_trip=0.001, asked=10)
    target = ahead.wanted()
    ahead.claim_sent(50, 0.010)
    ahead.claim_returned(0.010, target, runs(target), 0.011)
    assert len(ahead) == target
    assert ahead.wanted() == 0
    while ahead.wanted() == 0:
        ahead.take()
    # Refilled once about half were taken, by a claim of about half: not a run or two.
    assert 0 < len(ahead) <= target // 2 + 1
    assert ahead.wanted() >= target // 2 - 1

    assert ahead.max_hold == 0.5  # a quarter of the lease, under a second
    assert ahead.hand_back_at() == 0.011 + 0.5
    held = len(ahead)
    assert len(ahead.take_all()) == held
    assert len(ahead) == 0
    assert ahead.hand_back_at() is None
    assert ahead.wanted() == 0
